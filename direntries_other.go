//go:build !linux

package agentbe

import (
	"io/fs"
	"os"
	"slices"
	"strings"
)

// readDirIn lists the open directory f sorted by name; see
// direntries_linux.go.
func readDirIn(f *os.File, _ *os.Root, _ string) ([]fs.DirEntry, error) {
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}
