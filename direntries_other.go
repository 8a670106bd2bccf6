//go:build !linux

package agentbe

import (
	"io/fs"
	"os"
)

// readDirIn lists the open directory f; see direntries_linux.go.
func readDirIn(f *os.File, _ *os.Root, _ string) ([]fs.DirEntry, error) {
	return f.ReadDir(-1)
}
