package watch

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// FuzzParseDirents: any getdents buffer parses without panicking, and
// every name returned is non-empty, without NUL or slash.
func FuzzParseDirents(f *testing.F) {
	rec := func(name string, typ byte) []byte {
		n := 19 + len(name) + 1
		n = (n + 7) &^ 7
		b := make([]byte, n)
		binary.NativeEndian.PutUint16(b[16:], uint16(n))
		b[18] = typ
		copy(b[19:], name)
		return b
	}
	f.Add(append(append(rec(".", unix.DT_DIR), rec("..", unix.DT_DIR)...), rec("file", unix.DT_REG)...))
	f.Add(rec("x", unix.DT_LNK)[:10])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, buf []byte) {
		ents, _ := parseDirents(nil, buf)
		for _, d := range ents {
			if d.name == "" || d.name == "." || d.name == ".." || indexNUL([]byte(d.name)) >= 0 {
				t.Fatalf("bad name %q", d.name)
			}
		}
	})
}

// FuzzHandle: any buffer of inotify events is processed without
// panicking by an engine whose descriptors are all invalid (every file
// operation fails), and what it publishes names paths inside the tree.
func FuzzHandle(f *testing.F) {
	ev := func(wd int32, mask, cookie uint32, name string) []byte {
		nlen := 0
		if name != "" {
			nlen = (len(name) + 1 + 15) &^ 15
		}
		b := make([]byte, 16+nlen)
		binary.NativeEndian.PutUint32(b[0:], uint32(wd))
		binary.NativeEndian.PutUint32(b[4:], mask)
		binary.NativeEndian.PutUint32(b[8:], cookie)
		binary.NativeEndian.PutUint32(b[12:], uint32(nlen))
		copy(b[16:], name)
		return b
	}
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	f.Add(cat(ev(1, unix.IN_CREATE, 0, "a"), ev(1, unix.IN_CLOSE_WRITE, 0, "a"), ev(2, unix.IN_MODIFY, 0, "b")))
	f.Add(cat(ev(1, unix.IN_MOVED_FROM|unix.IN_ISDIR, 7, "sub"), ev(1, unix.IN_MOVED_TO|unix.IN_ISDIR, 7, "sub2"), ev(2, unix.IN_MOVE_SELF, 0, "")))
	f.Add(cat(ev(1, unix.IN_MOVED_FROM, 7, "f"), ev(2, unix.IN_CREATE, 0, "g"), ev(-1, unix.IN_Q_OVERFLOW, 0, "")))
	f.Add(cat(ev(2, unix.IN_DELETE_SELF, 0, ""), ev(2, unix.IN_IGNORED, 0, ""), ev(1, unix.IN_DELETE|unix.IN_ISDIR, 0, "sub")))
	f.Add(cat(ev(1, unix.IN_CREATE|unix.IN_ISDIR, 0, "../../etc"), ev(1, unix.IN_IGNORED, 0, "")))
	f.Add([]byte{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, buf []byte) {
		cfg := (&Config{}).withDefaults()
		now := time.Unix(1000, 0)
		e := &engine{
			cfg:   cfg,
			ifd:   -1,
			tg:    &target{dir: "x"},
			afd:   -1,
			bfd:   -1,
			nodes: make(map[int32]*node),
			co:    newCoalescer(&cfg, now),
			f:     &feed{ring: newRing(cfg.RingSize, cfg.RingBytes), done: make(chan struct{})},
		}
		e.root = &node{wd: 1}
		e.nodes[1] = e.root
		sub := &node{wd: 2, name: "sub"}
		e.root.attach(sub)
		e.nodes[2] = sub
		e.nwatches = 2
		e.handle(now, buf)
		if e.held != nil {
			e.moveOut(now)
		}
		e.co.drain(now)
		for _, ev := range e.co.take() {
			for _, p := range []string{ev.Path, ev.OldPath} {
				if p == "." || p == "" && ev.Op != Renamed {
					continue
				}
				for _, el := range strings.Split(p, "/") {
					if !validName(el) {
						t.Fatalf("event outside the tree: %s", ev)
					}
				}
			}
		}
	})
}
