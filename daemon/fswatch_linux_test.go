//go:build linux

package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// sseEvent is one server-sent event.
type sseEvent struct{ id, event, data string }

// sseStream reads server-sent events from a response.
type sseStream struct {
	resp *http.Response
	br   *bufio.Reader
}

func openWatch(t *testing.T, d *testDaemon, query string, hdr ...string) (*http.Response, *sseStream) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", d.url+"/v1/fs/watch"+query, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, &sseStream{resp: resp, br: bufio.NewReader(resp.Body)}
}

// next returns the next event (comments skipped); it fails the test after
// a generous deadline.
func (s *sseStream) next(t *testing.T) sseEvent {
	t.Helper()
	type res struct {
		ev  sseEvent
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var ev sseEvent
		for {
			line, err := s.br.ReadString('\n')
			if err != nil {
				ch <- res{err: err}
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if ev.event != "" {
					ch <- res{ev: ev}
					return
				}
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			}
		}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("stream: %v", r.err)
		}
		return r.ev
	case <-time.After(20 * time.Second):
		t.Fatal("no event")
	}
	return sseEvent{}
}

// until returns the change event whose data has path p.
func (s *sseStream) until(t *testing.T, p string) (sseEvent, agentbe.ChangeEvent) {
	t.Helper()
	for {
		ev := s.next(t)
		if ev.event != "change" {
			continue
		}
		var c agentbe.ChangeEvent
		if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
			t.Fatal(err)
		}
		if c.Path == p {
			return ev, c
		}
	}
}

// TestWatchRoute: the SSE wire format (ready, then change events with
// id "<feed>:<seq>"), the /v1 token rule, Last-Event-ID resuming with
// every missed event, and X-Scope-Path confining paths.
func TestWatchRoute(t *testing.T) {
	d := startDaemon(t, Config{AuthToken: "tok", Isolation: "software"})
	root := d.RootDir()
	if resp, _ := openWatch(t, d, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	if resp, _ := openWatch(t, d, "?path=nope", "Authorization", "Bearer tok"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("missing dir: %d", resp.StatusCode)
	}
	if resp, _ := openWatch(t, d, "?path=../..", "Authorization", "Bearer tok"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("escape: %d", resp.StatusCode)
	}
	resp, s := openWatch(t, d, "", "Authorization", "Bearer tok")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("watch: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ready := s.next(t)
	if ready.event != "ready" || !strings.HasSuffix(ready.id, ":0") {
		t.Fatalf("first event %+v", ready)
	}
	feed := strings.TrimSuffix(ready.id, ":0")
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("a"), 0o644))
	ev, c := s.until(t, "a.txt")
	if ev.id != agentbe.FormatWatchCursor(feed, c.Seq) || c.Kind != agentbe.ChangeCreated {
		t.Fatalf("event %+v %+v", ev, c)
	}
	resp.Body.Close() // the client goes away; the feed lingers

	for _, n := range []string{"b.txt", "c.txt"} {
		must(t, os.WriteFile(filepath.Join(root, n), nil, 0o644))
	}
	_, s2 := openWatch(t, d, "", "Authorization", "Bearer tok", "Last-Event-ID", ev.id)
	if r := s2.next(t); r.event != "ready" || r.id != ev.id {
		t.Fatalf("resumed stream starts %+v, want ready at %s", r, ev.id)
	}
	s2.until(t, "b.txt")
	s2.until(t, "c.txt")

	// A cursor of a feed that is gone: a rescan first.
	_, s3 := openWatch(t, d, "", "Authorization", "Bearer tok", "Last-Event-ID", "0123456789abcdef:5")
	s3.next(t) // ready
	r := s3.next(t)
	var rc agentbe.ChangeEvent
	json.Unmarshal([]byte(r.data), &rc)
	if rc.Kind != agentbe.ChangeRescan {
		t.Fatalf("unknown cursor: %+v", r)
	}

	// A scoped stream reports paths relative to the scope, nothing else.
	must(t, os.MkdirAll(filepath.Join(root, "sc", "in"), 0o755))
	_, s4 := openWatch(t, d, "?path=in", "Authorization", "Bearer tok", "X-Scope-Path", "sc")
	s4.next(t)
	must(t, os.WriteFile(filepath.Join(root, "outside.txt"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(root, "sc", "in", "x.txt"), nil, 0o644))
	_, first := s4.until(t, "in/x.txt")
	if first.Seq != 1 {
		t.Fatalf("scoped stream saw other events before: %+v", first)
	}

	// A link out of the scope cannot be watched, whatever it names.
	outside := t.TempDir()
	must(t, os.Symlink(outside, filepath.Join(root, "sc", "out")))
	must(t, os.Symlink("..", filepath.Join(root, "sc", "up")))
	for _, p := range []string{"out", "up", "in/../..", "/"} {
		resp, _ := openWatch(t, d, "?path="+p, "Authorization", "Bearer tok", "X-Scope-Path", "sc")
		if p == "/" { // the scope's root, as an absolute workspace path
			if resp.StatusCode != 200 {
				t.Fatalf("/: %d", resp.StatusCode)
			}
			resp.Body.Close()
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "PATH_ESCAPE_ATTEMPT") || strings.Contains(string(b), outside) {
			t.Fatalf("%s: %d %s", p, resp.StatusCode, b)
		}
	}
}

// TestWatchRouteStreamLimit: streams beyond MaxWatchStreams get 503.
func TestWatchRouteStreamLimit(t *testing.T) {
	d := startDaemon(t, Config{AuthToken: "tok", Isolation: "software", MaxWatchStreams: 1})
	_, s := openWatch(t, d, "", "Authorization", "Bearer tok")
	s.next(t)
	if resp, _ := openWatch(t, d, "", "Authorization", "Bearer tok"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second stream: %d", resp.StatusCode)
	}
}

// TestGrepRoute: POST /v1/fs/grep answers the search as JSON, scoped,
// with the tool's text; errors are problem+json with a code.
func TestGrepRoute(t *testing.T) {
	d := startDaemon(t, Config{AuthToken: "tok", Isolation: "software"})
	root := d.RootDir()
	must(t, os.MkdirAll(filepath.Join(root, "sc"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "top.txt"), []byte("needle top\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "sc", "in.txt"), []byte("a needle\n"), 0o644))
	post := func(body string, hdr ...string) (int, string) {
		req, _ := http.NewRequest("POST", d.url+"/v1/fs/grep", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post(`{"pattern":"needle","outputMode":"content","lineNumbers":true}`)
	var res agentbe.GrepResult
	json.Unmarshal([]byte(body), &res)
	if code != 200 || res.Text != "sc/in.txt:1:a needle\ntop.txt:1:needle top" || len(res.Files) != 2 {
		t.Fatalf("grep: %d %s", code, body)
	}
	code, body = post(`{"pattern":"needle"}`, "X-Scope-Path", "sc")
	json.Unmarshal([]byte(body), &res)
	if code != 200 || res.Text != "in.txt" {
		t.Fatalf("scoped grep: %d %s", code, body)
	}
	if code, body = post(`{"pattern":"needle","path":".."}`, "X-Scope-Path", "sc"); code != 403 || !strings.Contains(body, `"code":"PATH_ESCAPE_ATTEMPT"`) {
		t.Fatalf("escape: %d %s", code, body)
	}
	if code, body = post(`{"pattern":"(?<n>x)"}`); code != 400 || !strings.Contains(body, "Command execution failed with exit code 1: regex parse error") {
		t.Fatalf("bad regex: %d %s", code, body)
	}
	if code, _ = post(`{"pattern":"x","path":"nope"}`); code != 404 {
		t.Fatalf("missing path: %d", code)
	}
	req, _ := http.NewRequest("POST", d.url+"/v1/fs/grep", strings.NewReader(`{"pattern":"x"}`))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("no token: %v %v", resp, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
