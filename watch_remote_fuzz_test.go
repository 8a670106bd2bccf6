package agentbe

import (
	"bytes"
	"testing"
)

// FuzzWatchCursor: ParseWatchCursor never panics, and what it accepts
// formats back to itself.
func FuzzWatchCursor(f *testing.F) {
	for _, s := range []string{"", "a:1", "3f2a:0", ":5", "a:b:7", "x:18446744073709551615", "x:-1", "x:1 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, seq, err := ParseWatchCursor(s)
		if err == nil && FormatWatchCursor(id, seq) != s {
			// Leading zeros or "+" are the only accepted non-canonical forms.
			id2, seq2, err2 := ParseWatchCursor(FormatWatchCursor(id, seq))
			if err2 != nil || id2 != id || seq2 != seq {
				t.Fatalf("%q: round trip %q %d", s, id2, seq2)
			}
		}
	})
}

// FuzzWatchSSE feeds arbitrary bytes to a Remote Watcher's event-stream
// reader: it must never panic, and it stops at the end of the input.
func FuzzWatchSSE(f *testing.F) {
	f.Add([]byte("retry: 1000\nid: f:0\nevent: ready\ndata: {}\n\nid: f:1\nevent: change\ndata: {\"seq\":1,\"kind\":\"created\",\"path\":\"a\"}\n\n: keepalive\n\nevent: ended\ndata: {\"note\":\"x\"}\n\n"))
	f.Add([]byte("event: change\ndata: {\n\n"))
	f.Add([]byte("id: :\nevent: ready\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		w := &remoteWatch{events: make(chan remoteItem, 1), done: make(chan struct{}), ready: make(chan struct{})}
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-w.events:
				case <-stop:
					return
				}
			}
		}()
		_ = w.read(bytes.NewReader(b))
		close(stop)
	})
}
