package sse

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
)

func TestAppendEvent(t *testing.T) {
	for _, c := range []struct {
		event, id, data, want string
	}{
		{"message", "", `{}`, "event: message\ndata: {}\n\n"},
		{"log", "7", `{"a":1}`, "event: log\nid: 7\ndata: {\"a\":1}\n\n"},
		{"", "", `x`, "data: x\n\n"},
		{"ready", "f:0", ``, "event: ready\nid: f:0\ndata: \n\n"},
	} {
		if got := string(AppendEvent([]byte("<"), c.event, c.id, []byte(c.data))); got != "<"+c.want {
			t.Errorf("AppendEvent(%q, %q, %q) = %q, want %q", c.event, c.id, c.data, got, "<"+c.want)
		}
	}
	if ID(0) != "" || ID(42) != "42" {
		t.Errorf("ID: %q %q", ID(0), ID(42))
	}
}

// TestStreamHeadersAndEvents: Start sends the headers at once (a client
// sees the stream open before the first event), keeps a caller's
// Cache-Control, and events from many goroutines arrive whole.
func TestStreamHeadersAndEvents(t *testing.T) {
	const writers, each = 8, 50
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("keep") {
			w.Header().Set("Cache-Control", "no-cache, no-transform")
		}
		s, err := Start(w, 0)
		if err != nil {
			t.Error(err)
			return
		}
		var wg sync.WaitGroup
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range each {
					if err := s.Event("e", ID(uint64(i*each+j+1)), []byte(strings.Repeat("d", 100))); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}))
	defer srv.Close()
	for _, q := range []string{"", "?keep"} {
		resp, err := http.Get(srv.URL + q)
		if err != nil {
			t.Fatal(err)
		}
		want := "no-cache"
		if q != "" {
			want = "no-cache, no-transform"
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" ||
			resp.Header.Get("Cache-Control") != want || resp.Header.Get("X-Accel-Buffering") != "no" {
			t.Errorf("%s: %d %v", q, resp.StatusCode, resp.Header)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		events := strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n")
		seen := map[string]bool{}
		for _, ev := range events {
			lines := strings.Split(ev, "\n")
			if len(lines) != 3 || lines[0] != "event: e" || !strings.HasPrefix(lines[1], "id: ") || lines[2] != "data: "+strings.Repeat("d", 100) {
				t.Fatalf("%s: torn event %q", q, ev)
			}
			seen[lines[1]] = true
		}
		if len(seen) != writers*each {
			t.Errorf("%s: %d distinct events, want %d", q, len(seen), writers*each)
		}
	}
}

// TestStreamStuckReader: a client that reads nothing makes a write fail
// once it has waited the stream's timeout, and every later write fails at
// once with ErrClosed.
func TestStreamStuckReader(t *testing.T) {
	result := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := Start(w, 200*time.Millisecond)
		if err != nil {
			result <- err
			return
		}
		pad := []byte(strings.Repeat("x", 64<<10))
		for {
			if err := s.Event("e", "", pad); err != nil {
				if err2 := s.Write([]byte(": more\n\n")); !errors.Is(err2, ErrClosed) {
					err = errors.New("write after failure: " + err2.Error())
				}
				result <- err
				return
			}
		}
	}))
	defer srv.Close()
	defer srv.CloseClientConnections()
	if status := testenv.StuckClient(t, srv.URL, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); !strings.Contains(status, " 200 ") {
		t.Fatalf("status %q", status)
	}
	select {
	case err := <-result:
		if err == nil || errors.Is(err, ErrClosed) || strings.HasPrefix(err.Error(), "write after failure") {
			t.Fatalf("first failed write: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a write still waits 20 s after the client stopped reading")
	}
}
