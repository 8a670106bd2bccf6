package wspath

import "unicode/utf8"

// IsASCII reports whether name is all ASCII: such a name has one Unicode
// normal form, so no other spelling of it can name the same file on a
// file system that normalizes (the MCP tools and Local.writeInDir skip
// their normal-form checks for it).
func IsASCII(name string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
