package acp

import (
	"errors"
	"path"
	"strings"
)

// Limits on one archive member name.
const (
	maxMemberNameBytes = 4096
	maxMemberDepth     = 128
)

var errBadMember = errors.New("unsafe archive member name")

// CleanMemberName validates a tar member name and returns it cleaned and
// relative ("" for the archive root, "./" or "."). It refuses, rather than
// repairs, anything that could point outside the extraction directory or
// be read two ways: absolute names, any ".." element, NUL bytes, empty
// names, and names too long or too deep. Symbolic links already present in
// the workspace are the jail's business (os.Root), not this function's.
func CleanMemberName(name string) (string, error) {
	if name == "" || len(name) > maxMemberNameBytes || strings.IndexByte(name, 0) >= 0 {
		return "", errBadMember
	}
	if name[0] == '/' {
		return "", errBadMember
	}
	depth := 0
	for _, el := range strings.Split(name, "/") {
		switch el {
		case "..":
			return "", errBadMember
		case "", ".":
		default:
			depth++
		}
	}
	if depth > maxMemberDepth {
		return "", errBadMember
	}
	c := path.Clean(name)
	if c == "." {
		return "", nil
	}
	if c == ".." || strings.HasPrefix(c, "../") || path.IsAbs(c) {
		return "", errBadMember // unreachable after the checks above; kept as a guard
	}
	return c, nil
}
