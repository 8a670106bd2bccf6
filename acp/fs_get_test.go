package acp

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFSGetHeaders: a plain GET (sent whole, in chunks) carries the
// headers http.ServeContent gives a 200, and a conditional GET with the
// returned Last-Modified gets 304; HEAD gets the length and no body.
func TestFSGetHeaders(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	data := make([]byte, sendChunk+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(e.root, "big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.do("GET", "/v1/fs/file?path=big.bin", "", nil)
	if r.status != 200 || string(r.body) != string(data) {
		t.Fatalf("GET: %d, %d bytes", r.status, len(r.body))
	}
	lm := r.header.Get("Last-Modified")
	if r.header.Get("Accept-Ranges") != "bytes" || r.header.Get("Content-Length") != "8400953" || lm == "" {
		t.Fatalf("headers %v", r.header)
	}
	if c := e.do("GET", "/v1/fs/file?path=big.bin", "", nil, "If-Modified-Since", lm); c.status != 304 || len(c.body) != 0 {
		t.Fatalf("conditional GET: %d, %d bytes", c.status, len(c.body))
	}
	if h := e.do("HEAD", "/v1/fs/file?path=big.bin", "", nil); h.status != 200 || len(h.body) != 0 || h.header.Get("Content-Length") != "8400953" {
		t.Fatalf("HEAD: %d %v", h.status, h.header)
	}
	if g := e.do("GET", "/v1/fs/file?path=big.bin", "", nil, "Range", "bytes=8388600-8388609"); g.status != 206 || string(g.body) != string(data[8388600:8388610]) {
		t.Fatalf("Range: %d %q", g.status, g.body)
	}
}

// TestFSGetStopsAtDestroy: a download of a large file stops soon after the
// backend is destroyed (within a chunk and the socket buffers), although
// the whole file goes out with sendfile while it lives.
func TestFSGetStopsAtDestroy(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	const size = 1 << 30 // sparse: no disk used
	f, err := os.Create(filepath.Join(e.root, "huge.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	resp, err := http.Get(e.srv.URL + "/v1/fs/file?path=huge.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := e.local.Destroy(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(io.Discard, resp.Body)
		done <- n
	}()
	select {
	case n := <-done:
		if n > 256<<20 {
			t.Fatalf("%d MiB more sent after Destroy", n>>20)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the download went on after Destroy")
	}
}

// TestFSGetPlainReader: sendWhole sends a reader without a descriptor
// (through a writer without ReadFrom) whole, and stops at a short file.
func TestFSGetPlainReader(t *testing.T) {
	size := int64(3 * sendChunk / 2)
	rec := httptest.NewRecorder()
	sendWhole(rec, &zeroReader{n: size}, fakeInfo{size: size})
	if int64(rec.Body.Len()) != size || rec.Code != 200 || rec.Header().Get("Content-Length") != "12582912" {
		t.Fatalf("%d bytes, status %d, %v", rec.Body.Len(), rec.Code, rec.Header())
	}
	short := httptest.NewRecorder()
	sendWhole(short, &zeroReader{n: 10}, fakeInfo{size: 20})
	if short.Body.Len() != 10 {
		t.Fatalf("a short file: %d bytes", short.Body.Len())
	}
}

type fakeInfo struct{ size int64 }

func (f fakeInfo) Name() string       { return "f" }
func (f fakeInfo) Size() int64        { return f.size }
func (f fakeInfo) Mode() fs.FileMode  { return 0o644 }
func (f fakeInfo) ModTime() time.Time { return time.Unix(1e9, 0) }
func (f fakeInfo) IsDir() bool        { return false }
func (f fakeInfo) Sys() any           { return nil }
