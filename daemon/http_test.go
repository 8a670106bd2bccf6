package daemon

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
)

func TestHealth(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{}, `"transports":{"mcp":true,"ssh-ws":true,"ssh":false}`},
		{Config{DisableSSHWS: true}, `"transports":{"mcp":true,"ssh-ws":false,"ssh":false}`},
	}
	for _, c := range cases {
		c.cfg.AuthToken = "secret" // /health needs none
		c.cfg.Version = "9.8.7"
		d := startDaemon(t, c.cfg)
		resp, err := http.Get(d.url + "/health")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// The reference's fields first, in its order; ours follow (see
		// TestHealthReportsIsolationAndBuild).
		want := `{"status":"ok","version":"9.8.7","rootDir":` + jsonString(d.RootDir()) + `,` + c.want + `,"isolation":`
		if resp.StatusCode != 200 || !strings.HasPrefix(string(raw), want) || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("health %d %s\nwant %s", resp.StatusCode, raw, want)
		}
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestMCPAuth(t *testing.T) {
	d := startDaemon(t, Config{AuthToken: "s3cret"})
	const unauthorized = `{"error":"Unauthorized","message":"Invalid or missing authentication token"}`
	cases := []struct {
		name   string
		hdr    []string
		status int
	}{
		{"none", nil, 401},
		{"empty", []string{"Authorization", ""}, 401},
		{"wrong", []string{"Authorization", "Bearer nope"}, 401},
		{"lower scheme", []string{"Authorization", "bearer s3cret"}, 401},
		{"token scheme", []string{"Authorization", "Token s3cret"}, 401},
		{"double space", []string{"Authorization", "Bearer  s3cret"}, 401},
		{"prefix", []string{"Authorization", "Bearer s3cre"}, 401},
		{"upper token", []string{"Authorization", "Bearer S3CRET"}, 401},
		{"two headers", []string{"Authorization", "Bearer s3cret", "Authorization", "Bearer s3cret"}, 401},
		{"ok", []string{"Authorization", "Bearer s3cret"}, 200},
	}
	for _, c := range cases {
		status, body := d.post(t, initBody, c.hdr...)
		if status != c.status {
			t.Errorf("%s: status %d %s", c.name, status, body)
		}
		if c.status == 401 && body != unauthorized {
			t.Errorf("%s: body %s", c.name, body)
		}
	}
	// GET /mcp: 405 once authenticated.
	req, _ := http.NewRequest(http.MethodGet, d.url+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /mcp: %d", resp.StatusCode)
	}
	if strings.Contains(d.log.String(), "s3cret") {
		t.Error("the access log contains the token")
	}
}

func TestRootDirHeader(t *testing.T) {
	d := startDaemon(t, Config{})
	root := d.RootDir()
	cases := []struct {
		val    string
		status int
	}{
		{root, 200}, {root + "/", 200}, {root + "//", 200}, {"undefined", 200},
		{root + "/sub", 403}, {"/elsewhere", 403}, {"", 403},
	}
	for _, c := range cases {
		status, body := d.post(t, initBody, "X-Root-Dir", c.val)
		if status != c.status {
			t.Errorf("X-Root-Dir %q: %d %s", c.val, status, body)
		}
		if c.status == 403 {
			want := `{"error":"Root directory mismatch","message":"Server is configured for ` + root + `, not ` + c.val + `"}`
			if body != want {
				t.Errorf("X-Root-Dir %q: body %s", c.val, body)
			}
		}
	}
}

func TestScopeHeader(t *testing.T) {
	d := startDaemon(t, Config{})
	const invalid = `{"error":"Invalid scope path","message":"Scope path must not contain path traversal sequences"}`
	for _, bad := range []string{"..", "../x", "a/../b", "a/..", "a//b", "./a", "a/./b", "/../etc"} {
		status, body := d.post(t, initBody, "X-Scope-Path", bad)
		if status != 400 || body != invalid {
			t.Errorf("scope %q: %d %s", bad, status, body)
		}
	}
	// Legal names, leading slashes stripped; each scope sees only its files.
	for _, sc := range []string{"a..b", "/users/u1", "users/u2/"} {
		status, body := d.post(t, toolCall("write_file", `{"path":"f.txt","content":"`+sc+`"}`), "X-Scope-Path", sc)
		if status != 200 || strings.Contains(body, `"isError":true`) {
			t.Fatalf("write in scope %q: %d %s", sc, status, body)
		}
	}
	for dir, want := range map[string]string{"a..b": "a..b", "users/u1": "/users/u1", "users/u2": "users/u2/"} {
		b, err := os.ReadFile(filepath.Join(d.RootDir(), dir, "f.txt"))
		if err != nil || string(b) != want {
			t.Errorf("%s/f.txt = %q, %v", dir, b, err)
		}
	}
	status, body := d.post(t, toolCall("read_text_file", `{"path":"../u1/f.txt"}`), "X-Scope-Path", "users/u2")
	if status != 200 || !strings.Contains(body, `"isError":true`) || strings.Contains(body, `"text":"/users/u1"`) {
		t.Errorf("sibling read: %d %s", status, body)
	}
}

func TestStaticScope(t *testing.T) {
	d := startDaemon(t, Config{ScopePath: "/tenant"})
	status, body := d.post(t, initBody, "X-Scope-Path", "other")
	want := `{"error":"Scope conflict","message":"Server was started with static scope '/tenant', but request also specified scope 'other'. Use one or the other, not both."}`
	if status != 400 || body != want {
		t.Errorf("conflict: %d %s", status, body)
	}
	status, body = d.post(t, toolCall("write_file", `{"path":"x.txt","content":"hi"}`))
	if status != 200 || strings.Contains(body, `"isError":true`) {
		t.Fatalf("write: %d %s", status, body)
	}
	if b, err := os.ReadFile(filepath.Join(d.RootDir(), "tenant", "x.txt")); err != nil || string(b) != "hi" {
		t.Errorf("tenant/x.txt = %q, %v", b, err)
	}
	if _, err := New(Config{RootDir: t.TempDir(), ScopePath: "a/../.."}); !errors.Is(err, ErrInvalidScope) {
		t.Errorf("New with a bad static scope: %v", err)
	}
}

func TestDangerousCommandBlocked(t *testing.T) {
	d := startDaemon(t, Config{})
	canary := filepath.Join(d.RootDir(), "canary")
	os.WriteFile(canary, []byte("x"), 0o644)
	status, body := d.post(t, toolCall("exec", `{"command":"sudo rm canary"}`))
	if status != 200 || !strings.Contains(body, `"isError":true`) {
		t.Errorf("sudo: %d %s", status, body)
	}
	if _, err := os.Stat(canary); err != nil {
		t.Errorf("canary gone: %v", err)
	}
	status, body = d.post(t, toolCall("exec", `{"command":"echo fine"}`))
	if status != 200 || !strings.Contains(body, "fine") {
		t.Errorf("echo: %d %s", status, body)
	}
}

func TestDNSRebinding(t *testing.T) {
	open := startDaemon(t, Config{})
	if status, body := open.post(t, initBody, "Host", "evil.example:3001"); status != 403 {
		t.Errorf("no token, foreign Host on loopback: %d %s", status, body)
	}
	if status, _ := open.post(t, initBody, "Host", "localhost:3001"); status != 200 {
		t.Errorf("no token, localhost: %d", status)
	}
	withToken := startDaemon(t, Config{AuthToken: "t"})
	if status, body := withToken.post(t, initBody, "Host", "api.example.com", "Authorization", "Bearer t"); status != 200 {
		t.Errorf("token, proxied Host: %d %s", status, body)
	}
}

func TestBodyLimit(t *testing.T) {
	d := startDaemon(t, Config{MaxBodyBytes: 1024})
	status, _ := d.post(t, toolCall("write_file", `{"path":"big","content":"`+strings.Repeat("x", 4096)+`"}`))
	if status != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d", status)
	}
	if _, err := os.Stat(filepath.Join(d.RootDir(), "big")); err == nil {
		t.Error("oversized write happened")
	}
}

func TestInFlightCap(t *testing.T) {
	d := startDaemon(t, Config{MaxInFlight: 1})
	os.WriteFile(filepath.Join(d.RootDir(), "fifo-gate"), nil, 0o644)
	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		close(started)
		// Holds the only slot until the gate file disappears.
		d.post(t, toolCall("exec", `{"command":"touch started; while [ -e fifo-gate ]; do sleep 0.05; done"}`))
	}()
	<-started
	for i := 0; i < 1000; i++ {
		if _, err := os.Stat(filepath.Join(d.RootDir(), "started")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	status, body := d.post(t, initBody)
	got503 := status == http.StatusServiceUnavailable && strings.Contains(body, "daemon full: 1 concurrent requests")
	os.Remove(filepath.Join(d.RootDir(), "fifo-gate"))
	wg.Wait()
	if !got503 {
		t.Error("no 503 while the only slot was taken")
	}
	if status, _ := d.post(t, initBody); status != 200 {
		t.Errorf("after release: %d", status)
	}
}

// TestPanicRecoveryAndAccessLog: a handler's panic is answered with 500
// (when nothing was sent yet), logged at ERROR with its stack, counted, and
// its access line says so at ERROR even when the response had been sent
// (a panic after the answer, in a request's cleanup, was otherwise a quiet
// 200 line).
func TestPanicRecoveryAndAccessLog(t *testing.T) {
	buf := &syncBuffer{}
	pl := &panicLog{log: slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	h := accessLog(pl, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/boom":
			panic("boom")
		case "/late":
			w.Write([]byte("answered"))
			panic("late boom")
		}
		w.Write([]byte("ok"))
	}))
	rec := newRecorder()
	h.ServeHTTP(rec, mustReq("GET", "/boom?token=hidden"))
	if rec.status != 500 || !strings.Contains(rec.body.String(), "Internal Server Error") {
		t.Errorf("panic: %d %s", rec.status, rec.body.String())
	}
	rec = newRecorder()
	h.ServeHTTP(rec, mustReq("GET", "/fine"))
	if rec.status != 200 {
		t.Errorf("after panic: %d", rec.status)
	}
	rec = newRecorder()
	h.ServeHTTP(rec, mustReq("GET", "/late"))
	if rec.status != 200 || rec.body.String() != "answered" {
		t.Errorf("late panic: %d %q", rec.status, rec.body.String())
	}
	if n := pl.n.Load(); n != 2 {
		t.Errorf("%d panics counted, want 2", n)
	}
	out := buf.String()
	if n := strings.Count(out, "msg=http "); n != 3 {
		t.Errorf("%d access lines:\n%s", n, out)
	}
	if strings.Contains(out, "hidden") {
		t.Error("query string logged")
	}
	for _, want := range []string{
		`level=ERROR msg="daemon: recovered panic" where="HTTP GET /boom" panic=boom stack=`,
		`level=ERROR msg="daemon: recovered panic" where="HTTP GET /late" panic="late boom" stack=`,
		"level=ERROR msg=http method=GET path=/boom status=500",
		"level=ERROR msg=http method=GET path=/late status=200",
		"level=DEBUG msg=http method=GET path=/fine status=200",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "http_test.go") {
		t.Errorf("stack does not name the panicking handler:\n%s", out)
	}
}

func TestScopePerRequestReleased(t *testing.T) {
	d := startDaemon(t, Config{})
	d.post(t, toolCall("write_file", `{"path":"f","content":"x"}`), "X-Scope-Path", "s")
	before := countFDs(t)
	for i := 0; i < 50; i++ {
		d.post(t, toolCall("read_text_file", `{"path":"f"}`), "X-Scope-Path", "s")
	}
	if after := countFDs(t); after > before+5 {
		t.Errorf("fds %d -> %d after 50 scoped requests", before, after)
	}
}

func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func TestNormalizeScopePath(t *testing.T) {
	cases := []struct{ in, out string }{
		{"", ""}, {"/", ""}, {"a", "a"}, {"/a/b", "a/b"}, {"///a", "a"}, {"a/", "a"},
		{"a..b", "a..b"}, {"..a", "..a"}, {"a/b..", "a/b.."}, {"...", "..."},
		// "." is the workspace root, as "/" is.
		{".", ""}, {"./", ""}, {"/.", ""}, {"//./", ""},
	}
	for _, c := range cases {
		got, err := NormalizeScopePath(c.in)
		if err != nil || got != c.out {
			t.Errorf("%q: %q, %v", c.in, got, err)
		}
	}
	for _, bad := range []string{"..", "a/..", "../a", "a/../b", "a//b", "./a", "a/.", "a//", "a\x00b"} {
		if _, err := NormalizeScopePath(bad); !errors.Is(err, ErrInvalidScope) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	// Names that are not what they look like, or that no file system
	// takes: refused as well, with their own message.
	for _, bad := range []string{" a", "a ", "/ a", "a/ b/c", "a/b\t", "\u00a0a", "a\nb", "a\x7fb", "\xff\xfe",
		strings.Repeat("n", 256), "a/" + strings.Repeat("n", 256)} {
		_, err := NormalizeScopePath(bad)
		if !errors.Is(err, ErrInvalidScope) || !strings.Contains(err.Error(), "names") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	for _, good := range []string{"a b", "é/ü", strings.Repeat("n", 255)} {
		if got, err := NormalizeScopePath(good); err != nil || got != good {
			t.Errorf("%q: %q, %v", good, got, err)
		}
	}
}

// TestScopeHeaderBadNames: an X-Scope-Path that is no usable name is
// answered 400 on /mcp and /v1 (a leading space inside the path, a name
// too long for the file system: was 500), and no directory is made.
func TestScopeHeaderBadNames(t *testing.T) {
	d := startDaemon(t, Config{DisableSSHWS: true})
	for _, sc := range []string{"/ a", "a/ b", "a /b", strings.Repeat("n", 300), "\u00a0a"} {
		for _, rt := range []rebindRoute{
			{name: "mcp", method: "POST", target: "/mcp", body: toolCall("write_file", `{"path":"f","content":"x"}`)},
			{name: "v1", method: "PUT", target: "/v1/fs/file?path=f", body: "x"},
		} {
			status, body := rawStatus(t, d.addr, rt, "localhost", "", "X-Scope-Path", sc)
			if status != http.StatusBadRequest || !strings.Contains(body, "Invalid scope path") && !strings.Contains(body, "Scope path") {
				t.Errorf("%s scope %.20q: %d %s", rt.name, sc, status, body)
			}
		}
	}
	if n := countEntries(t, d.RootDir()); n != 0 {
		t.Errorf("%d entries made in the workspace", n)
	}
}

func FuzzNormalizeScopePath(f *testing.F) {
	for _, s := range []string{"a", "/a/b/", "..", "a/../b", "a..b", "./x", "a//b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := NormalizeScopePath(s)
		if err != nil {
			return
		}
		for _, seg := range strings.Split(got, "/") {
			if seg == ".." || (seg == "" && got != "") {
				t.Fatalf("%q -> %q", s, got)
			}
		}
		if strings.HasPrefix(got, "/") {
			t.Fatalf("%q -> %q", s, got)
		}
		again, err := NormalizeScopePath(got)
		if err != nil || again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", s, got, again, err)
		}
	})
}

// TestNoGoroutineLeak: after MCP requests, SSH sessions and shutdown, the
// goroutine count returns to its baseline.
func TestNoGoroutineLeak(t *testing.T) {
	http.DefaultClient.CloseIdleConnections()
	base := runtime.NumGoroutine()
	func() {
		d := startDaemon(t, Config{})
		d.post(t, toolCall("exec", `{"command":"echo x"}`), "X-Scope-Path", "s")
		c := sshClient(t, d, "", "")
		runSSH(t, c, "echo hi", "in")
		s, _ := c.NewSession()
		marker := testenv.SleepMarker()
		s.Start("exec sleep " + marker)
		waitProcess(t, marker)
		d.stop()
		c.Close()
		waitNoProcess(t, marker)
	}()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines %d -> %d\n%s", base, n, buf[:runtime.Stack(buf, true)])
	}
}

// countEntries counts the entries of directory dir.
func countEntries(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
