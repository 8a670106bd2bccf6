//go:build linux

package replace

import "golang.org/x/sys/unix"

// ByExchange replaces the entry newName of directory newDir by the file
// oldName of directory oldDir (descriptors, both on one file system): it
// swaps the two and removes oldName, which then names the replaced file.
// It reports false, having changed nothing, when that cannot be done (no
// RENAME_EXCHANGE here, nothing at newName, or what came out of newName
// cannot be removed as a file, such as a directory, which is swapped back);
// the caller then renames, which gives the right answer or error.
func ByExchange(oldDir int, oldName string, newDir int, newName string) bool {
	if unix.Renameat2(oldDir, oldName, newDir, newName, unix.RENAME_EXCHANGE) != nil {
		return false
	}
	if unix.Unlinkat(oldDir, oldName, 0) == nil {
		return true
	}
	_ = unix.Renameat2(oldDir, oldName, newDir, newName, unix.RENAME_EXCHANGE)
	return false
}
