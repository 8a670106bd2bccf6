//go:build !linux

package replace

// ByExchange is Linux-only (renameat2); elsewhere it reports false and the
// caller renames.
func ByExchange(oldDir int, oldName string, newDir int, newName string) bool { return false }
