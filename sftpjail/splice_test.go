//go:build linux

package sftpjail

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// pipePair is one end of a pair of OS pipes.
type pipePair struct {
	*os.File // read end
	w        *os.File
}

func (p pipePair) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipePair) Close() error                { p.w.Close(); return p.File.Close() }

func TestSplicerOnlyForFiles(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	sp := newSplicer(w)
	if sp == nil {
		t.Fatal("no splicer to a pipe")
	}
	sp.close()
	// A wrapper embedding the read end writes elsewhere: not trusted.
	if sp := newSplicer(pipePair{r, w}); sp != nil {
		sp.close()
		t.Fatal("splicer on a wrapper type")
	}
}

// TestSpliceTransfers moves data both ways over a Stream of OS pipes and
// over a socket pair, where READ replies are spliced.
func TestSpliceTransfers(t *testing.T) {
	transports := []struct {
		name  string
		start func(t *testing.T, dir string) io.ReadWriteCloser
	}{
		{"stream-of-pipes", func(t *testing.T, dir string) io.ReadWriteCloser {
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			cr, sw, _ := os.Pipe()
			sr, cw, _ := os.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- Serve(Stream(sr, sw), root, nil)
				sw.Close()
				sr.Close()
				root.Close()
			}()
			t.Cleanup(func() {
				if err := <-done; err != nil {
					t.Errorf("Serve: %v", err)
				}
			})
			return pipePair{cr, cw}
		}},
		{"socketpair", func(t *testing.T, dir string) io.ReadWriteCloser {
			rw, wait := startServer(t, dir, nil)
			t.Cleanup(func() {
				if err := wait(); err != nil {
					t.Errorf("Serve: %v", err)
				}
			})
			return rw
		}},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			dir := tempDir(t)
			c, err := NewClientContext(ctxT(t), tr.start(t, dir), &ClientOptions{ChunkSize: maxData})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx := ctxT(t)

			data := make([]byte, 3<<20+4097)
			rand.Read(data)
			f, err := c.Create(ctx, "big.bin")
			if err != nil {
				t.Fatal(err)
			}
			if n, err := io.Copy(f, bytes.NewReader(data)); err != nil || n != int64(len(data)) {
				t.Fatalf("upload: %d, %v", n, err)
			}
			// A large write at an unaligned offset, inside the file.
			patch := make([]byte, 200<<10)
			rand.Read(patch)
			if _, err := f.WriteAt(patch, 12345); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			copy(data[12345:], patch)
			if got, err := os.ReadFile(filepath.Join(dir, "big.bin")); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("file on disk differs (%v)", err)
			}

			r, err := c.Open(ctx, "big.bin")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var got bytes.Buffer
			if _, err := io.Copy(&got, r); err != nil || !bytes.Equal(got.Bytes(), data) {
				t.Fatalf("download differs (%v)", err)
			}
			for _, tc := range []struct{ off, n int }{
				{0, 1}, {1, 4095}, {4095, 70000}, {777, maxData}, {len(data) - 10, 100}, {len(data), 10}, {len(data) + 5000, 10},
			} {
				p := make([]byte, tc.n)
				n, err := r.ReadAt(p, int64(tc.off))
				want := max(0, min(tc.n, len(data)-tc.off))
				if n != want || (n < tc.n) != errors.Is(err, io.EOF) || (err != nil && !errors.Is(err, io.EOF)) {
					t.Errorf("ReadAt(%d bytes at %d) = %d, %v; want %d", tc.n, tc.off, n, err, want)
					continue
				}
				if n > 0 && !bytes.Equal(p[:n], data[tc.off:tc.off+n]) {
					t.Errorf("ReadAt(%d bytes at %d): wrong data", tc.n, tc.off)
				}
			}

			// A large WRITE the file refuses: the session goes on.
			ro, err := c.Open(ctx, "big.bin")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ro.WriteAt(patch, 0); err == nil {
				t.Error("WRITE on a read-only handle succeeded")
			}
			ro.Close()
			if fi, err := c.Stat(ctx, "big.bin"); err != nil || fi.Size() != int64(len(data)) {
				t.Fatalf("after a failed WRITE: %v, %v", fi, err)
			}
		})
	}
}

// TestSpliceReadDirect: a READ of a regular file to a pipe is served by
// spliceRead itself (not by the copying fallback), with the reply whole.
func TestSpliceReadDirect(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 100000)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	s := &session{spl: newSplicer(w), w: &replyWriter{bw: bufio.NewWriter(w)}}
	if s.spl == nil {
		t.Fatal("no splicer to a pipe")
	}
	defer s.spl.close()
	h := &handle{f: f, regular: true, name: "f"}
	got := make(chan []byte, 1)
	go func() {
		var buf []byte
		body, err := readPacket(r, &buf)
		if err != nil {
			t.Error(err)
		}
		got <- body
	}()
	if !s.spliceRead(7, h, 1000, 50000) {
		t.Fatal("spliceRead declined a regular file")
	}
	body := <-got
	// DATA: type, id, length, then the bytes.
	if body[0] != fxpData || !bytes.Equal(body[9:], data[1000:51000]) {
		t.Fatalf("reply type %d, %d data bytes", body[0], len(body)-9)
	}
}
