package daemon

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStatusWriterReadFrom: io.Copy through the access log's wrapper
// reaches the response's ReadFrom when it has one and a plain copy when
// not, and the wrapper still counts status and bytes.
func TestStatusWriterReadFrom(t *testing.T) {
	body := strings.Repeat("x", 100000)
	// httptest.ResponseRecorder has no ReadFrom: the plain copy.
	rec := httptest.NewRecorder()
	w := &statusWriter{ResponseWriter: rec}
	if n, err := io.Copy(w, strings.NewReader(body)); err != nil || n != int64(len(body)) {
		t.Fatalf("copy: %d %v", n, err)
	}
	if w.status != 200 || w.bytes != int64(len(body)) || rec.Body.String() != body {
		t.Fatalf("status %d, %d bytes counted, %d written", w.status, w.bytes, rec.Body.Len())
	}
	// A real server's response has ReadFrom.
	var counted *statusWriter
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if _, ok := rw.(io.ReaderFrom); !ok {
			t.Error("the server's response has no ReadFrom")
		}
		counted = &statusWriter{ResponseWriter: rw}
		io.Copy(counted, strings.NewReader(body))
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != body || counted.bytes != int64(len(body)) || counted.status != 200 {
		t.Fatalf("%d bytes received, %d counted, status %d", len(got), counted.bytes, counted.status)
	}
}
