package sftpjail

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadLengthIsBounded: a READ asks for up to 4 GiB; the server never
// sizes a reply from the request. Against a 64 GiB sparse file, READs of
// length 0xFFFFFFFF (many in flight) each get at most maxData bytes.
func TestReadLengthIsBounded(t *testing.T) {
	dir := tempDir(t)
	p := filepath.Join(dir, "big")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 64<<30); err != nil {
		t.Fatal(err)
	}
	rw, wait := startServer(t, dir, &ServerOptions{Workers: 4, alwaysConcurrent: true})
	defer func() {
		rw.Close()
		if err := wait(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	var buf []byte
	next := func() *decoder {
		t.Helper()
		body, err := readPacket(rw, &buf)
		if err != nil {
			t.Fatal(err)
		}
		return &decoder{b: body}
	}
	rw.Write(initPacket)
	if d := next(); d.u8() != fxpVersion {
		t.Fatal("no VERSION")
	}
	rw.Write(pkt(fxpOpen, u32f(1), strf("big"), u32f(flagRead), attrf(Attrs{})))
	d := next()
	if d.u8() != fxpHandle || d.u32() != 1 {
		t.Fatal("no HANDLE")
	}
	h := string(d.bytes())
	const n = 64
	for i := uint32(0); i < n; i++ {
		off := uint64(i) * maxData
		if i == n-1 {
			off = 64<<30 - 10
		}
		rw.Write(pkt(fxpRead, u32f(100+i), strf(h), u64f(off), u32f(0xFFFFFFFF)))
	}
	for i := uint32(0); i < n; i++ {
		d := next()
		typ, id := d.u8(), d.u32()
		data := d.bytes()
		want := maxData
		if id == 100+n-1 {
			want = 10
		}
		if typ != fxpData || !d.ok() || len(data) != want {
			t.Fatalf("reply %d to READ %d: type %d, %d bytes, want %d", i, id, typ, len(data), want)
		}
	}
}

// TestDefaultHandleBound: the zero ServerOptions bound a session to 256
// open handles; the 257th open fails until one is closed.
func TestDefaultHandleBound(t *testing.T) {
	dir := tempDir(t)
	writeFile(t, filepath.Join(dir, "f"), "x")
	c := newClientFor(t, dir, nil)
	ctx := ctxT(t)
	var files []*File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for i := 0; i < defaultMaxHandles; i++ {
		f, err := c.Open(ctx, "f")
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		files = append(files, f)
	}
	if _, err := c.ReadDir(ctx, "."); err == nil {
		t.Fatal("a directory listing beyond the handle bound succeeded")
	}
	if _, err := c.Open(ctx, "f"); err == nil {
		t.Fatal("handle 257 was granted")
	}
	files[0].Close()
	files = files[1:]
	f, err := c.Open(ctx, "f")
	if err != nil {
		t.Fatalf("after a close: %v", err)
	}
	files = append(files, f)
}
