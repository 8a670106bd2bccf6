package acp

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkACPRoundTrip measures one JSON-RPC request through the proxy to
// the Node test agent and back (HTTP POST -> stdin -> agent -> stdout ->
// HTTP 200), on a keep-alive loopback connection.
func BenchmarkACPRoundTrip(b *testing.B) {
	e := newTestEnv(b, envOpts{})
	e.startSession("bench")
	url := e.srv.URL + "/v1/acp/bench"
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(1000+i) + `,"method":"_bench/echo","params":{}}`
		resp, err := http.Post(url, "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatal(resp.Status)
		}
	}
}

// BenchmarkRingAppend measures the hot path of every agent message once
// the replay ring is full: an append evicting the oldest event, and an
// up-to-date reader's Since.
func BenchmarkRingAppend(b *testing.B) {
	r := NewRing(DefaultReplayEvents, DefaultReplayBytes)
	msg := make([]byte, 200)
	for range DefaultReplayEvents {
		r.Append(msg)
	}
	for b.Loop() {
		id := r.Append(msg)
		if s := r.Since(id - 1); len(s.Events) != 1 {
			b.Fatal(len(s.Events))
		}
	}
}

const benchFileSize = 64 << 20

type zeroReader struct{ n int64 }

func (z *zeroReader) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > z.n {
		p = p[:z.n]
	}
	clear(p)
	z.n -= int64(len(p))
	return len(p), nil
}

// BenchmarkFSPut64MiB streams a 64 MiB body into PUT /v1/fs/file (atomic
// temp-and-rename write).
func BenchmarkFSPut64MiB(b *testing.B) {
	e := newTestEnv(b, envOpts{})
	b.SetBytes(benchFileSize)
	for b.Loop() {
		putZeros(b, e, "big.bin")
	}
}

// putZeros writes benchFileSize zero bytes to p through PUT /v1/fs/file.
func putZeros(b *testing.B, e *testEnv, p string) {
	req, _ := http.NewRequest("PUT", e.srv.URL+"/v1/fs/file?path="+p, &zeroReader{benchFileSize})
	req.ContentLength = benchFileSize
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatal(resp.Status)
	}
}

// BenchmarkFSGet64MiB streams a 64 MiB file out of GET /v1/fs/file.
func BenchmarkFSGet64MiB(b *testing.B) {
	e := newTestEnv(b, envOpts{})
	putZeros(b, e, "big.bin")
	b.SetBytes(benchFileSize)
	for b.Loop() {
		getWhole(b, e.srv.URL+"/v1/fs/file?path=big.bin")
	}
}

// getWhole GETs url and reads the benchFileSize bytes it must answer.
func getWhole(b *testing.B, url string) {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n != benchFileSize {
		b.Fatal(n)
	}
}

// BenchmarkServeFile64MiB is the ceiling of BenchmarkFSGet64MiB: net/http's
// own http.ServeFile (sendfile) of the same file, with the same client.
func BenchmarkServeFile64MiB(b *testing.B) {
	e := newTestEnv(b, envOpts{})
	putZeros(b, e, "big.bin")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(e.root, "big.bin"))
	}))
	defer srv.Close()
	b.SetBytes(benchFileSize)
	for b.Loop() {
		getWhole(b, srv.URL)
	}
}
