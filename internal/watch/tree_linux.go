package watch

import (
	"encoding/binary"
	"strings"
)

// node is a watched directory.
type node struct {
	wd       int32
	name     string
	parent   *node // nil for the watched directory itself
	children map[string]*node
	// special remembers the entries that are neither files nor
	// directories (links, FIFOs...), so that their removal or rename
	// reports the right kind.
	special map[string]Kind
	// moves counts renames of this directory seen in its parent whose
	// IN_MOVE_SELF has not arrived yet.
	moves int
}

// path returns n's path relative to the watched directory ("." for it).
func (n *node) path() string {
	if n.parent == nil {
		return "."
	}
	var elems []string
	for x := n; x.parent != nil; x = x.parent {
		elems = append(elems, x.name)
	}
	var b strings.Builder
	for i := len(elems) - 1; i >= 0; i-- {
		b.WriteString(elems[i])
		if i > 0 {
			b.WriteByte('/')
		}
	}
	return b.String()
}

// join returns the path of the entry name in n.
func (n *node) join(name string) string {
	if n.parent == nil {
		return name
	}
	return n.path() + "/" + name
}

func (n *node) attach(child *node) {
	if n.children == nil {
		n.children = make(map[string]*node)
	}
	n.children[child.name] = child
	child.parent = n
}

// detach unlinks n from its parent (if it is still the parent's entry of
// its name).
func (n *node) detach() {
	if p := n.parent; p != nil && p.children[n.name] == n {
		delete(p.children, n.name)
	}
}

// dirent is one entry of a directory listing.
type dirent struct {
	name string
	typ  uint8 // DT_* value
}

// parseDirents appends the linux_dirent64 records of buf to out, leaving
// out "." and "..". It reports false for a malformed buffer.
func parseDirents(out []dirent, buf []byte) ([]dirent, bool) {
	const (
		offReclen = 16
		offType   = 18
		offName   = 19
	)
	for len(buf) > 0 {
		if len(buf) < offName {
			return out, false
		}
		reclen := int(binary.NativeEndian.Uint16(buf[offReclen:]))
		if reclen < offName || reclen > len(buf) {
			return out, false
		}
		name := buf[offName:reclen]
		if i := indexNUL(name); i >= 0 {
			name = name[:i]
		}
		if s := string(name); s != "." && s != ".." && s != "" {
			out = append(out, dirent{name: s, typ: buf[offType]})
		}
		buf = buf[reclen:]
	}
	return out, true
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}
