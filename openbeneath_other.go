//go:build !linux

package agentbe

import "os"

// openBeneath has no single-call confined open to use here: the caller
// takes the os.Root path.
func openBeneath(dir *os.File, name, rel string, flags int) (*os.File, bool) {
	return nil, false
}

// readBeneath: see openBeneath.
func readBeneath(dir *os.File, rel string, limit int64) ([]byte, bool) {
	return nil, false
}
