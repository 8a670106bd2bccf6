//go:build linux

package daemon

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// rawWatch opens GET /v1/fs/watch on a connection of its own, so that the
// test decides when (and whether) it is read and how it ends. rcvbuf > 0
// shrinks the client's socket receive buffer, so that a client that stops
// reading holds up the daemon's writes soon. hdr are header name/value
// pairs.
func rawWatch(t *testing.T, d *testDaemon, tok, query string, rcvbuf int, hdr ...string) (*net.TCPConn, *http.Response, *sseStream) {
	t.Helper()
	return rawGet(t, d, tok, "/v1/fs/watch"+query, rcvbuf, hdr...)
}

// rawGet is rawWatch for any target (path and query).
func rawGet(t *testing.T, d *testDaemon, tok, target string, rcvbuf int, hdr ...string) (*net.TCPConn, *http.Response, *sseStream) {
	t.Helper()
	dialer := net.Dialer{}
	if rcvbuf > 0 {
		dialer.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
			if err != nil {
				return err
			}
			return serr
		}
	}
	c, err := dialer.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	conn := c.(*net.TCPConn)
	t.Cleanup(func() { conn.Close() })
	req, _ := http.NewRequest("GET", d.url+target, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 512), req)
	if err != nil {
		t.Fatal(err)
	}
	return conn, resp, &sseStream{resp: resp, br: bufio.NewReaderSize(resp.Body, 512)}
}

// TestWatchHostileCursors: Last-Event-ID (and ?cursor=) values a hostile
// client makes up — garbage, negative, overflowing, huge, beyond the
// header limit, with line breaks meant to inject events, and a real feed
// with a sequence number far ahead of it — get a bounded 400 (or 431),
// or a stream that starts with a rescan and then goes on with real
// events; the daemon stays healthy.
func TestWatchHostileCursors(t *testing.T) {
	d := startDaemon(t, Config{AuthToken: "tok", Isolation: "software"})
	root := d.RootDir()
	huge := strings.Repeat("9", 60<<10)
	for _, c := range []string{"garbage", ":", ":5", "feed:", "feed:-1", "feed:+1", "feed: 1", "feed:0x10", "feed:1e3",
		"feed:18446744073709551616", "feed:" + huge, strings.Repeat("\xff", 30<<10) + ":x", strings.Repeat("a:", 30<<10) + "b"} {
		_, resp, _ := rawWatch(t, d, "tok", "", 0, "Last-Event-ID", c)
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || len(body) > 2048 || !strings.Contains(string(body), "INVALID") {
			t.Errorf("Last-Event-ID %.40q (%d bytes): %d, %d bytes: %.200s", c, len(c), resp.StatusCode, len(body), body)
		}
	}
	// Beyond the daemon's header limit.
	_, resp, _ := rawWatch(t, d, "tok", "", 0, "Last-Event-ID", strings.Repeat("9", 80<<10))
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("an 80 KiB Last-Event-ID: %d", resp.StatusCode)
	}
	resp.Body.Close()

	// Line breaks in a cursor (only ?cursor= can carry them) must not
	// turn into events of the stream: the cursor is not echoed.
	inject := "x\n\nid: 1\nevent: change\ndata: {\"path\":\"injected\"}\n\n:1"
	_, resp, s := rawWatch(t, d, "tok", "?cursor="+url.QueryEscape(inject), 0)
	if resp.StatusCode != 200 {
		t.Fatalf("cursor with line breaks: %d", resp.StatusCode)
	}
	if ready := s.next(t); ready.event != "ready" || strings.Contains(ready.id, "x") {
		t.Fatalf("ready %+v", ready)
	}
	if ev := s.next(t); !strings.Contains(ev.data, `"kind":"rescan"`) {
		t.Fatalf("after an unknown cursor: %+v", ev)
	}
	must(t, os.WriteFile(filepath.Join(root, "real.txt"), nil, 0o644))
	if ev, _ := s.until(t, "real.txt"); strings.Contains(ev.data, "injected") {
		t.Fatalf("injected event: %+v", ev)
	}

	// The cursor of the live feed, far ahead of it: one rescan, then the
	// real events (not a loop of rescans).
	_, _, s = rawWatch(t, d, "tok", "", 0)
	ready := s.next(t)
	feed := strings.TrimSuffix(ready.id, ":0")
	for _, seq := range []uint64{1 << 63, ^uint64(0)} {
		_, resp, s := rawWatch(t, d, "tok", "", 0, "Last-Event-ID", agentbe.FormatWatchCursor(feed, seq))
		if resp.StatusCode != 200 {
			t.Fatalf("cursor ahead: %d", resp.StatusCode)
		}
		s.next(t) // ready
		if ev := s.next(t); !strings.Contains(ev.data, `"kind":"rescan"`) {
			t.Fatalf("cursor ahead: %+v", ev)
		}
		name := fmt.Sprintf("after-%d.txt", seq)
		must(t, os.WriteFile(filepath.Join(root, name), nil, 0o644))
		for {
			ev := s.next(t)
			if strings.Contains(ev.data, `"kind":"rescan"`) {
				t.Fatalf("a second rescan: %+v", ev)
			}
			if strings.Contains(ev.data, name) {
				break
			}
		}
	}
	d.healthy(t)
}

// TestTenantWatchShares: a tenant's watch streams count against its share
// of requests in flight (mcpInFlight: 429 with Retry-After beyond it) and
// its watched directories against its watch budget (429 WATCH_LIMIT),
// while another tenant still watches.
func TestTenantWatchShares(t *testing.T) {
	d := startTenantDaemon(t, Config{DisableSSHWS: true, MaxWatchesPerTenant: 5}, `{"mcpInFlight":3}`)
	root := d.RootDir()
	for i := 0; i < 10; i++ {
		must(t, os.MkdirAll(filepath.Join(root, "users/alice/tree", fmt.Sprint(i)), 0o755))
	}
	must(t, os.MkdirAll(filepath.Join(root, "users/alice/small"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "users/bob/tree/a"), 0o755))

	_, resp, _ := rawWatch(t, d, aliceTok, "?path=tree", 0)
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "WATCH_LIMIT") {
		t.Errorf("alice's watch beyond her budget: %d %s", resp.StatusCode, body)
	}
	for i := 0; i < 3; i++ {
		_, resp, s := rawWatch(t, d, aliceTok, "?path=small", 0)
		if resp.StatusCode != 200 {
			t.Fatalf("alice's stream %d: %d", i, resp.StatusCode)
		}
		s.next(t)
	}
	_, resp, _ = rawWatch(t, d, aliceTok, "?path=small", 0)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("alice's fourth stream: %d", resp.StatusCode)
	}
	resp.Body.Close()
	_, resp, s := rawWatch(t, d, bobTok, "?path=tree", 0)
	if resp.StatusCode != 200 {
		t.Fatalf("bob's watch while alice is at her caps: %d", resp.StatusCode)
	}
	s.next(t)
	must(t, os.WriteFile(filepath.Join(root, "users/bob/tree/a/x"), nil, 0o644))
	s.until(t, "tree/a/x")
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestWatchSlowReaderBounded: a tenant's client that stops reading its
// stream while many changes with long paths happen (far more bytes of
// paths than the kernel's socket buffers hold) does not make the daemon
// buffer them: its heap grows by a bounded amount, well below the bytes
// of the changes, and another tenant is served meanwhile. Once a write
// has waited watchWriteTimeout, the stream ends and gives its slot back,
// though the client never closed it.
func TestWatchSlowReaderBounded(t *testing.T) {
	defer func(old time.Duration) { watchWriteTimeout = old }(watchWriteTimeout)
	watchWriteTimeout = time.Second
	d := startTenantDaemon(t, Config{DisableSSHWS: true}, `{}`)
	defer d.stop()
	root := d.RootDir()
	// A chain of long directory names, so that each event's path is
	// about 3 KB.
	deep := filepath.Join(root, "users/alice")
	for i := 0; i < 12; i++ {
		deep = filepath.Join(deep, fmt.Sprintf("%02d", i)+strings.Repeat("d", 240))
	}
	must(t, os.MkdirAll(deep, 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "users/bob"), 0o755))

	conn, resp, s := rawWatch(t, d, aliceTok, "", 4096)
	if resp.StatusCode != 200 {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	s.next(t) // ready; from now on the client reads nothing
	before := heapInUse()
	const files = 20000
	pathBytes := 0
	for i := 0; i < files; i++ {
		p := filepath.Join(deep, fmt.Sprintf("%05d", i)+strings.Repeat("f", 200))
		must(t, os.WriteFile(p, nil, 0o644))
		pathBytes += len(p) - len(root)
	}
	// Wait for the feed to have seen them: bob's own watch gets an event
	// written after them (the daemon serves him meanwhile).
	_, resp, bs := rawWatch(t, d, bobTok, "", 0)
	if resp.StatusCode != 200 {
		t.Fatalf("bob's watch: %d", resp.StatusCode)
	}
	bs.next(t)
	must(t, os.WriteFile(filepath.Join(root, "users/bob/after"), nil, 0o644))
	bs.until(t, "after")
	d.healthy(t)
	after := heapInUse()
	grown := int64(after) - int64(before)
	t.Logf("changes: %d paths, %d MiB; heap in use %d → %d MiB", files, pathBytes>>20, before>>20, after>>20)
	if pathBytes < 48<<20 {
		t.Fatalf("the changes are too small to show anything: %d bytes", pathBytes)
	}
	if grown > 24<<20 {
		t.Errorf("the daemon's heap grew by %d MiB for a client that reads nothing", grown>>20)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d.watch.mu.Lock()
		streams := d.watch.streams
		d.watch.mu.Unlock()
		if streams == 1 { // bob's
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open: the stuck one did not end", streams)
		}
	}
	conn.Close()
}

// TestWatchDisconnectNoLeak: clients that go away in the middle of their
// streams (a reset while events flow) leave no goroutine, stream slot or
// in-flight share behind.
func TestWatchDisconnectNoLeak(t *testing.T) {
	d := startTenantDaemon(t, Config{DisableSSHWS: true}, `{"mcpInFlight":12}`)
	root := d.RootDir()
	must(t, os.MkdirAll(filepath.Join(root, "users/alice/w"), 0o755))
	// One stream stays open throughout, so that the feed (and its reader)
	// exists before and after.
	_, resp, keep := rawWatch(t, d, aliceTok, "?path=w", 0)
	if resp.StatusCode != 200 {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	keep.next(t)
	http.DefaultClient.CloseIdleConnections()
	base := runtime.NumGoroutine()

	var conns []*net.TCPConn
	for i := 0; i < 10; i++ {
		c, resp, s := rawWatch(t, d, aliceTok, "?path=w", 4096)
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d: %d", i, resp.StatusCode)
		}
		s.next(t)
		conns = append(conns, c)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.WriteFile(filepath.Join(root, "users/alice/w", fmt.Sprint(i%50)), []byte{byte(i)}, 0o644)
		}
	}()
	keep.until(t, "w/49")
	for _, c := range conns {
		c.SetLinger(0) // a reset, not an orderly close
		c.Close()
	}
	close(stop)
	<-done

	deadline := time.Now().Add(30 * time.Second)
	for {
		d.watch.mu.Lock()
		streams := d.watch.streams
		d.watch.mu.Unlock()
		n := runtime.NumGoroutine()
		if n <= base && streams == 1 {
			break
		}
		if time.Now().After(deadline) {
			var sb strings.Builder
			pprof.Lookup("goroutine").WriteTo(&sb, 1)
			t.Fatalf("%d goroutines (were %d), %d streams open after the clients left:\n%s", n, base, streams, sb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// alice's share of requests is whole again: 11 more streams fit.
	for i := 0; i < 11; i++ {
		_, resp, s := rawWatch(t, d, aliceTok, "?path=w", 0)
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d after the disconnects: %d", i, resp.StatusCode)
		}
		s.next(t)
	}
}

// TestWatchHostileNames: an agent names files so that their change events
// would forge others in a watcher's stream (line breaks of every kind SSE
// knows, an event's fields, invalid UTF-8): each change arrives as one
// event with its own path, and no forged event appears.
func TestWatchHostileNames(t *testing.T) {
	d := startDaemon(t, Config{AuthToken: "tok", Isolation: "software"})
	root := d.RootDir()
	_, resp, s := rawWatch(t, d, "tok", "", 0)
	if resp.StatusCode != 200 {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	s.next(t)
	forged := "\n\nid: x:99\nevent: change\ndata: {\"seq\":99,\"kind\":\"removed\",\"path\":\"forged\"}\n\n"
	names := []string{"lf" + forged, "cr" + strings.ReplaceAll(forged, "\n", "\r"), "crlf" + strings.ReplaceAll(forged, "\n", "\r\n"),
		"bad-utf8-\xff\xfe", "nul-like-\u2028\u2029", "last"}
	for _, n := range names {
		must(t, os.WriteFile(filepath.Join(root, n), nil, 0o644))
	}
	seen := map[string]bool{}
	for !seen["last"] {
		ev := s.next(t)
		if ev.event != "change" {
			t.Fatalf("event %q: %+v", ev.event, ev)
		}
		var c agentbe.ChangeEvent
		if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
			t.Fatalf("data %q: %v", ev.data, err)
		}
		if c.Path == "forged" || c.Seq == 99 || ev.id == "x:99" {
			t.Fatalf("forged event: %+v", ev)
		}
		seen[c.Path] = true
	}
	for _, n := range names {
		if n != "bad-utf8-\xff\xfe" && !seen[n] {
			t.Errorf("no event for %q (saw %v)", n, seen)
		}
	}
}

// TestTenantWatchForeignCursor: alice resumes with a cursor of bob's feed
// (leaked): she gets a rescan of her own scope, never one of bob's
// events; bob's stream is unaffected.
func TestTenantWatchForeignCursor(t *testing.T) {
	d := startTenantDaemon(t, Config{DisableSSHWS: true}, `{}`)
	root := d.RootDir()
	must(t, os.MkdirAll(filepath.Join(root, "users/alice"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "users/bob"), 0o755))
	_, resp, bs := rawWatch(t, d, bobTok, "", 0)
	if resp.StatusCode != 200 {
		t.Fatalf("bob's watch: %d", resp.StatusCode)
	}
	ready := bs.next(t)
	must(t, os.WriteFile(filepath.Join(root, "users/bob/bob-secret-name"), nil, 0o644))
	ev, _ := bs.until(t, "bob-secret-name")
	feed := strings.TrimSuffix(ready.id, ":0")
	for _, c := range []string{ready.id, ev.id, agentbe.FormatWatchCursor(feed, 0)} {
		_, resp, s := rawWatch(t, d, aliceTok, "", 0, "Last-Event-ID", c)
		if resp.StatusCode != 200 {
			t.Fatalf("alice with bob's cursor %s: %d", c, resp.StatusCode)
		}
		if r := s.next(t); r.event != "ready" || strings.HasPrefix(r.id, feed) {
			t.Fatalf("alice's stream starts %+v (bob's feed is %s)", r, feed)
		}
		if r := s.next(t); !strings.Contains(r.data, `"kind":"rescan"`) || strings.Contains(r.data, "bob") {
			t.Fatalf("alice's first event: %+v", r)
		}
		must(t, os.WriteFile(filepath.Join(root, "users/bob/bob-later"), nil, 0o644))
		must(t, os.WriteFile(filepath.Join(root, "users/alice/alice-mark"), nil, 0o644))
		for {
			r := s.next(t)
			if strings.Contains(r.data, "bob") {
				t.Fatalf("alice saw bob's event: %+v", r)
			}
			if strings.Contains(r.data, "alice-mark") {
				break
			}
		}
		os.Remove(filepath.Join(root, "users/alice/alice-mark"))
		os.Remove(filepath.Join(root, "users/bob/bob-later"))
	}
	must(t, os.WriteFile(filepath.Join(root, "users/bob/bob-end"), nil, 0o644))
	bs.until(t, "bob-end")
}
