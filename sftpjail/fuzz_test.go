package sftpjail

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
)

// pkt builds one framed packet for seeds.
func pkt(typ byte, fields ...func([]byte) []byte) []byte {
	b := startPacket(nil, typ)
	for _, f := range fields {
		b = f(b)
	}
	return finishPacket(b)
}

func u32f(v uint32) func([]byte) []byte   { return func(b []byte) []byte { return appendU32(b, v) } }
func u64f(v uint64) func([]byte) []byte   { return func(b []byte) []byte { return appendU64(b, v) } }
func strf(s string) func([]byte) []byte   { return func(b []byte) []byte { return appendString(b, s) } }
func attrf(a Attrs) func([]byte) []byte   { return func(b []byte) []byte { return appendAttrs(b, &a) } }
func rawf(raw []byte) func([]byte) []byte { return func(b []byte) []byte { return append(b, raw...) } }

var initPacket = pkt(fxpInit, u32f(3))

// seedSession is a plausible request sequence: open, write, read, stat,
// directory listing, links and renames.
func seedSession() []byte {
	var b bytes.Buffer
	b.Write(pkt(fxpOpen, u32f(1), strf("a/b.txt"), u32f(flagWrite|flagCreat|flagTrunc), attrf(Attrs{Flags: attrPermissions, Mode: 0o600})))
	b.Write(pkt(fxpWrite, u32f(2), strf("1"), u64f(0), strf("hello")))
	b.Write(pkt(fxpRead, u32f(3), strf("1"), u64f(0), u32f(100)))
	b.Write(pkt(fxpFstat, u32f(4), strf("1")))
	b.Write(pkt(fxpClose, u32f(5), strf("1")))
	b.Write(pkt(fxpOpendir, u32f(6), strf("/")))
	b.Write(pkt(fxpReaddir, u32f(7), strf("2")))
	b.Write(pkt(fxpSymlink, u32f(8), strf("a/b.txt"), strf("l")))
	b.Write(pkt(fxpReadlink, u32f(9), strf("l")))
	b.Write(pkt(fxpRealpath, u32f(10), strf("../..")))
	b.Write(pkt(fxpRename, u32f(11), strf("a"), strf("c/d")))
	b.Write(pkt(fxpExtended, u32f(12), strf(extPosixRename), strf("c"), strf("e")))
	b.Write(pkt(fxpSetstat, u32f(13), strf("e"), attrf(Attrs{Flags: attrPermissions | attrSize, Mode: 0o4777, Size: 3})))
	b.Write(pkt(fxpMkdir, u32f(14), strf("m"), attrf(Attrs{})))
	b.Write(pkt(fxpRmdir, u32f(15), strf("m")))
	b.Write(pkt(fxpRemove, u32f(16), strf("l")))
	b.Write(pkt(fxpExtended, u32f(17), strf(extLimits)))
	return b.Bytes()
}

// FuzzPacketDecode feeds arbitrary bytes to the packet reader and to every
// decoder of both sides: none may panic or read out of bounds.
func FuzzPacketDecode(f *testing.F) {
	f.Add(initPacket)
	f.Add(seedSession())
	f.Add(pkt(fxpName, u32f(1), u32f(2), strf("a"), strf("-rw-r--r-- a"), attrf(Attrs{Flags: attrSize | attrUIDGID | attrPermissions | attrACModTime})))
	f.Add(pkt(fxpAttrs, u32f(1), u32f(attrExtended), u32f(0xffffffff)))
	f.Add(pkt(fxpData, u32f(1), u32f(0xfffffff0)))
	f.Add(pkt(fxpVersion, u32f(3), strf(extLimits), strf("1"), strf("x")))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Add([]byte{0, 0, 0, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		var buf []byte
		for {
			body, err := readPacket(r, &buf)
			if err != nil {
				return
			}
			if len(body) < 5 || len(body) > maxPacket {
				t.Fatalf("readPacket returned %d bytes", len(body))
			}
			d := decoder{b: body[1:]}
			_ = d.u32()
			rep := reply{typ: body[0], body: d.b}
			names(&rep)
			readResult(&rep)
			handleOf(&rep)
			statusOf(&rep)
			d2 := decoder{b: rep.body}
			a := d2.attrs()
			a.FileMode()
			d3 := decoder{b: body[1:]}
			for d3.ok() && len(d3.b) > 0 {
				d3.str()
				d3.u64()
			}
		}
	})
}

// FuzzServe runs the server on arbitrary client bytes (after a valid
// INIT): it must never panic, hang or touch anything outside its root.
func FuzzServe(f *testing.F) {
	f.Add(seedSession())
	f.Add(pkt(fxpRead, u32f(1), strf("nope"), u64f(1<<63), u32f(1<<31)))
	f.Add(pkt(fxpWrite, u32f(1), strf("1"), u64f(0), u32f(0xffffffff)))
	f.Add(pkt(fxpOpen, u32f(1), strf("../x"), u32f(0x3f), attrf(Attrs{Flags: attrExtended}), rawf([]byte{0, 0, 0, 9})))
	f.Add(pkt(99, u32f(1)))
	f.Add(pkt(fxpInit, u32f(3)))
	f.Fuzz(func(t *testing.T, data []byte) {
		base := t.TempDir()
		dir := base + "/ws"
		os.Mkdir(dir, 0o755)
		os.WriteFile(base+"/canary", []byte("c"), 0o644)
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		in := io.MultiReader(bytes.NewReader(initPacket), bytes.NewReader(data))
		rw := struct {
			io.Reader
			io.Writer
		}{in, io.Discard}
		Serve(rw, root, &ServerOptions{MaxHandles: 8, Workers: 2})
		if b, err := os.ReadFile(base + "/canary"); err != nil || string(b) != "c" {
			t.Fatal("canary outside the root changed")
		}
		if es, _ := os.ReadDir(base); len(es) != 2 {
			t.Fatalf("%d entries next to the root", len(es))
		}
	})
}

// TestMalformedEndsSession: an oversized or truncated packet ends the
// session with ErrBadPacket, and handles opened before are closed.
func TestMalformedEndsSession(t *testing.T) {
	dir := tempDir(t)
	writeFile(t, dir+"/f", "x")
	for name, tail := range map[string][]byte{
		"oversized":     {0x7f, 0xff, 0xff, 0xff, fxpRead},
		"huge":          {0xff, 0xff, 0xff, 0xff},
		"short":         {0, 0, 0, 2, fxpOpen, 0},
		"field-overrun": pkt(fxpOpen, u32f(9), u32f(1000), rawf([]byte("abc"))),
		"bad-attrs":     pkt(fxpSetstat, u32f(9), strf("f"), u32f(attrExtended), u32f(1<<30)),
		"second-init":   pkt(fxpInit, u32f(3)),
	} {
		t.Run(name, func(t *testing.T) {
			root, _ := os.OpenRoot(dir)
			defer root.Close()
			var in bytes.Buffer
			in.Write(initPacket)
			in.Write(pkt(fxpOpen, u32f(1), strf("f"), u32f(flagRead), attrf(Attrs{})))
			in.Write(tail)
			var out bytes.Buffer
			err := Serve(struct {
				io.Reader
				io.Writer
			}{&in, &out}, root, nil)
			if err == nil || !errorsIsBad(err) {
				t.Fatalf("Serve = %v, want ErrBadPacket", err)
			}
			// VERSION then HANDLE were sent before the session ended.
			r := bytes.NewReader(out.Bytes())
			var buf []byte
			if body, err := readPacket(r, &buf); err != nil || body[0] != fxpVersion {
				t.Fatalf("first reply: %v", err)
			}
			if body, err := readPacket(r, &buf); err != nil || body[0] != fxpHandle {
				t.Fatalf("second reply: %v", err)
			}
		})
	}
}

// TestTruncatedStreamEndsSession: EOF inside a packet is an error, EOF
// between packets is a clean end.
func TestTruncatedStreamEndsSession(t *testing.T) {
	dir := tempDir(t)
	root, _ := os.OpenRoot(dir)
	defer root.Close()
	serve := func(in []byte) error {
		return Serve(struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(in), io.Discard}, root, nil)
	}
	if err := serve(initPacket); err != nil {
		t.Fatalf("clean end: %v", err)
	}
	if err := serve(append(append([]byte{}, initPacket...), 0, 0, 0, 20, fxpStat)); err == nil {
		t.Fatal("truncated packet: no error")
	}
	if err := serve(pkt(fxpOpen, u32f(1), strf("x"))); err == nil {
		t.Fatal("no INIT: no error")
	}
}

func errorsIsBad(err error) bool { return errors.Is(err, ErrBadPacket) }
