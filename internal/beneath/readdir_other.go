//go:build !linux

package beneath

import (
	"io/fs"
	"os"
	"slices"
	"strings"
)

// ReadDir lists the open directory f sorted by name; see readdir_linux.go.
func ReadDir(f *os.File, _ *os.Root, _ string) ([]fs.DirEntry, error) {
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}
