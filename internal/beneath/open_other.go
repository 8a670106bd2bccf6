//go:build !linux

package beneath

import "os"

// Open has no single-call confined open to use here: the caller takes the
// os.Root path.
func Open(dir *os.File, name, rel string, flags int) (*os.File, bool) {
	return nil, false
}

// ReadFile: see Open.
func ReadFile(dir *os.File, rel string, limit int64) ([]byte, bool) {
	return nil, false
}

// Disable has nothing to disable here.
func Disable() (restore func()) { return func() {} }
