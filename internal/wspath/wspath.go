// Package wspath is the one path resolver of agentbe: it maps a path given by
// a caller onto a clean path relative to a workspace root, following the
// project's conventions, and follows symbolic links inside an *os.Root
// without ever leaving it; and it opens directories on paths that others may
// write without following any link at all (OpenNoFollow, MkdirNoFollow).
// Every backend, the MCP tools, the SFTP server and the daemon use it.
package wspath

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// ErrEscape is returned when a path leaves the workspace.
var ErrEscape = errors.New("path escapes the workspace")

// ErrInvalid is returned for a path that cannot name a file (a NUL byte).
var ErrInvalid = errors.New("invalid path")

// maxLinks bounds symbolic link hops, as the kernel's MAXSYMLINKS does.
const maxLinks = 40

// Resolve maps p onto a clean slash-separated path relative to root, "." for
// the root itself. root must be an absolute, clean path ("/" allowed).
//
// The three cases of the conventions:
//   - a relative path resolves under root;
//   - an absolute path whose leading elements are root's elements is used
//     as it is (the rest is taken relative to root);
//   - any other absolute path is treated as relative (leading "/" dropped).
//
// A ".." that would climb above root at any point is rejected with ErrEscape,
// even if later elements come back inside; the decision is purely lexical and
// never consults the file system.
func Resolve(root, p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", ErrInvalid
	}
	rest := p
	if strings.HasPrefix(p, "/") {
		if r, ok := underRoot(root, p); ok {
			rest = r
		}
	}
	out := make([]string, 0, 8)
	for _, seg := range strings.Split(rest, "/") {
		switch seg {
		case "", ".":
		case "..":
			if len(out) == 0 {
				return "", ErrEscape
			}
			out = out[:len(out)-1]
		default:
			out = append(out, seg)
		}
	}
	if len(out) == 0 {
		return ".", nil
	}
	return strings.Join(out, "/"), nil
}

// underRoot reports whether absolute p starts with root's elements (ignoring
// empty and "." elements, never skipping ".."), and returns what follows.
func underRoot(root, p string) (string, bool) {
	rootSegs := splitClean(root)
	i := 0
	for _, want := range rootSegs {
		seg, next, ok := nextSeg(p, i)
		if !ok || seg != want {
			return "", false
		}
		i = next
	}
	return p[i:], true
}

// nextSeg returns the next element of p at or after byte i that is neither
// empty nor ".", and the offset just past it.
func nextSeg(p string, i int) (string, int, bool) {
	for i < len(p) {
		for i < len(p) && p[i] == '/' {
			i++
		}
		j := i
		for j < len(p) && p[j] != '/' {
			j++
		}
		seg := p[i:j]
		i = j
		if seg != "" && seg != "." {
			return seg, i, true
		}
	}
	return "", i, false
}

func splitClean(p string) []string {
	var segs []string
	for _, s := range strings.Split(p, "/") {
		if s != "" && s != "." {
			segs = append(segs, s)
		}
	}
	return segs
}

// Join returns the host form of rel under root (root "/" handled).
func Join(root, rel string) string {
	if rel == "." || rel == "" {
		return root
	}
	if root == "/" {
		return "/" + rel
	}
	return root + "/" + rel
}

// Within joins rel (a path relative to a sub-directory sub of the
// workspace) onto sub, both clean relative paths as Resolve returns them.
func Within(sub, rel string) string {
	if sub == "." || sub == "" {
		return rel
	}
	if rel == "." || rel == "" {
		return sub
	}
	return sub + "/" + rel
}

// RealPath follows the symbolic links of rel (a clean relative path as
// Resolve returns it) inside r and returns the clean relative path it names.
// hostRoot is r's absolute host path; an absolute link target under it is
// taken as pointing inside, any other absolute target escapes. A link that
// leads outside yields ErrEscape; more than 40 hops yield ELOOP. Elements
// from the first missing one on are appended as they are, so the result can
// name a file still to be created.
func RealPath(r *os.Root, hostRoot, rel string) (string, error) {
	pending := splitClean(rel)
	done := make([]string, 0, len(pending))
	hops := 0
	for len(pending) > 0 {
		name := pending[0]
		pending = pending[1:]
		if name == ".." {
			if len(done) == 0 {
				return "", ErrEscape
			}
			done = done[:len(done)-1]
			continue
		}
		cur := joinSegs(append(done, name))
		fi, err := r.Lstat(cur)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return finish(append(done, name), pending)
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, name)
			continue
		}
		if hops++; hops > maxLinks {
			return "", &fs.PathError{Op: "realpath", Path: rel, Err: syscall.ELOOP}
		}
		target, err := r.Readlink(cur)
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			inside, ok := underRoot(hostRoot, target)
			if !ok {
				return "", ErrEscape
			}
			target = inside
			done = done[:0]
		}
		pending = append(splitClean(target), pending...)
	}
	return joinSegs(done), nil
}

// finish appends the unresolved rest to done, still refusing a ".." that
// climbs out.
func finish(done, rest []string) (string, error) {
	for _, name := range rest {
		if name == ".." {
			if len(done) == 0 {
				return "", ErrEscape
			}
			done = done[:len(done)-1]
			continue
		}
		done = append(done, name)
	}
	return joinSegs(done), nil
}

func joinSegs(s []string) string {
	if len(s) == 0 {
		return "."
	}
	return strings.Join(s, "/")
}
