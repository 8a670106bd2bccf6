package daemon

import (
	"errors"
	"path"
	"strings"
)

// ErrInvalidScope is wrapped by NormalizeScopePath's error.
var ErrInvalidScope = errors.New("Scope path must not contain path traversal sequences")

// NormalizeScopePath validates a scope path (from --scopePath or the
// X-Scope-Path header) as daemon.md says: leading slashes are stripped, and
// a path with a ".." element, or one that normalisation would change
// ("a//b", "./a", "a/./b"), is refused with ErrInvalidScope. A ".." inside
// a name ("a..b") is an ordinary name. A trailing slash is kept by
// normalisation (as Node's path.normalize does) and then dropped. The
// result is "" for the workspace root itself ("" or "/"), or "." for ".".
func NormalizeScopePath(p string) (string, error) {
	p = strings.TrimLeft(p, "/")
	if p == "" {
		return "", nil
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", ErrInvalidScope
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", ErrInvalidScope
		}
	}
	trimmed := strings.TrimSuffix(p, "/")
	if path.Clean(trimmed) != trimmed {
		return "", ErrInvalidScope
	}
	return trimmed, nil
}
