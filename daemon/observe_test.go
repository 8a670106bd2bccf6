package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/acp"
	"github.com/agentbe/agent-backend/internal/metrics/metricstest"
	"github.com/agentbe/agent-backend/internal/wsnet"
	"golang.org/x/crypto/ssh"
)

const obsToken = "observability-test-token"

// do sends method path with body and headers (name, value pairs) and
// returns the response (body read) .
func (d *testDaemon) do(t *testing.T, method, path, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, d.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// scrape reads and strictly parses /metrics.
func (d *testDaemon) scrape(t *testing.T) metricstest.Scrape {
	t.Helper()
	resp, body := d.do(t, "GET", "/metrics", "", "Authorization", "Bearer "+obsToken)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	s, err := metricstest.Parse(body)
	if err != nil {
		t.Fatalf("invalid exposition: %v\n%s", err, body)
	}
	return s
}

func value(s metricstest.Scrape, name string, labels ...string) float64 {
	v, _ := s.Value(name, labels...)
	return v
}

// sshWithID connects an SSH client through /ssh whose upgrade carries
// X-Request-Id id.
func sshWithID(t *testing.T, d *testDaemon, id string) *ssh.Client {
	t.Helper()
	ws, err := wsnet.Dial(context.Background(), "ws://"+d.addr+"/ssh", wsnet.DialConfig{Header: http.Header{
		"Authorization": {"Bearer " + obsToken}, "X-Request-Id": {id}}})
	if err != nil {
		t.Fatal(err)
	}
	conn, chans, reqs, err := ssh.NewClientConn(ws, "daemon", &ssh.ClientConfig{User: "a",
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := ssh.NewClient(conn, chans, reqs)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMetrics checks that /metrics is valid exposition format, refused
// without the operator's token, and counts what happened: requests by
// route and code, tool calls, commands by result, SSH connections and
// bytes.
func TestMetrics(t *testing.T) {
	d := startDaemon(t, Config{AuthToken: obsToken})
	if resp, _ := d.do(t, "GET", "/metrics", ""); resp.StatusCode != 401 {
		t.Fatalf("/metrics without a token: %d", resp.StatusCode)
	}
	if resp, _ := d.do(t, "GET", "/metrics", "", "Authorization", "Bearer wrong"); resp.StatusCode != 401 {
		t.Fatalf("/metrics with a wrong token: %d", resp.StatusCode)
	}
	before := d.scrape(t)
	auth := []string{"Authorization", "Bearer " + obsToken}
	calls := []struct{ tool, args string }{
		{"write_file", `{"path":"a.txt","content":"hello"}`},
		{"read_text_file", `{"path":"a.txt"}`},
		{"read_text_file", `{"path":"missing.txt"}`},
		{"exec", `{"command":"echo hi"}`},
		{"exec", `{"command":"exit 3"}`},
		{"exec", `{"command":"rm -rf /"}`},
	}
	for _, c := range calls {
		if code, body := d.post(t, toolCall(c.tool, c.args), auth...); code != 200 {
			t.Fatalf("%s: %d %s", c.tool, code, body)
		}
	}
	if code, _ := d.post(t, toolCall("read_text_file", `{"path":"a.txt"}`)); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	c := sshWithID(t, d, "ssh-metrics")
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := sess.Output("echo over-wire"); err != nil || string(out) != "over-wire\n" {
		t.Fatalf("ssh exec: %q %v", out, err)
	}
	during := d.scrape(t)
	if v := value(during, "agentbe_ssh_connections"); v != 1 {
		t.Errorf("agentbe_ssh_connections = %v during a connection", v)
	}
	c.Close()

	after := d.scrape(t)
	delta := func(name string, labels ...string) float64 {
		return value(after, name, labels...) - value(before, name, labels...)
	}
	for _, w := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"agentbe_http_requests_total", []string{"route", "mcp", "code", "200"}, 6},
		{"agentbe_http_requests_total", []string{"route", "mcp", "code", "401"}, 1},
		{"agentbe_http_requests_total", []string{"route", "metrics", "code", "200"}, 2}, // before's and during's
		{"agentbe_http_request_duration_seconds_count", []string{"route", "mcp"}, 7},
		{"agentbe_mcp_tool_calls_total", []string{"tool", "write_file", "result", "ok"}, 1},
		{"agentbe_mcp_tool_calls_total", []string{"tool", "read_text_file", "result", "ok"}, 1},
		{"agentbe_mcp_tool_calls_total", []string{"tool", "read_text_file", "result", "error"}, 1},
		{"agentbe_exec_total", []string{"result", "ok"}, 2}, // MCP echo, SSH echo
		{"agentbe_exec_total", []string{"result", "failed"}, 1},
		{"agentbe_exec_total", []string{"result", "blocked"}, 1},
		{"agentbe_exec_duration_seconds_count", nil, 4},
		{"agentbe_auth_refused_total", []string{"route", "mcp"}, 1},
	} {
		if got := delta(w.name, w.labels...); got != w.want {
			t.Errorf("%s%v grew by %v, want %v", w.name, w.labels, got, w.want)
		}
	}
	if v := value(after, "agentbe_auth_refused_total", "route", "metrics"); v != 2 {
		t.Errorf("refused /metrics scrapes: %v", v)
	}
	if delta("agentbe_http_request_body_bytes_total", "route", "mcp") <= 0 ||
		delta("agentbe_http_response_body_bytes_total", "route", "mcp") <= 0 {
		t.Error("HTTP body bytes not counted")
	}
	if value(after, "agentbe_ssh_received_bytes_total") <= 0 || value(after, "agentbe_ssh_sent_bytes_total") <= 0 {
		t.Error("SSH bytes not counted")
	}
	if value(after, "go_goroutines") <= 0 || value(after, "go_memstats_heap_alloc_bytes") <= 0 {
		t.Error("no Go runtime metrics")
	}
	if _, ok := after.Value("agentbe_acp_instances"); !ok {
		t.Error("no agentbe_acp_instances")
	}
	// The connection's gauge drops once its handler has ended.
	deadline := time.Now().Add(10 * time.Second)
	for value(d.scrape(t), "agentbe_ssh_connections") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("agentbe_ssh_connections stays above 0 after the connection closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMetricsLabelsBounded checks that paths a client makes up do not
// become label values.
func TestMetricsLabelsBounded(t *testing.T) {
	d := startDaemon(t, Config{AuthToken: obsToken})
	for _, p := range []string{"/x1", "/x2/y", "/v1/zzz", "/v1/fs/nothing", "/mcp/extra"} {
		d.do(t, "GET", p, "")
	}
	for _, s := range d.scrape(t)["agentbe_http_requests_total"].Samples {
		switch s.Labels["route"] {
		case "other", "v1_other", "v1_fs", "metrics", "mcp":
		default:
			t.Errorf("unexpected route label %q", s.Labels["route"])
		}
	}
}

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestRequestID checks X-Request-Id on every response (the client's when
// sane, else a new one), on the /ssh upgrade's 101, and in the log lines
// of the request with the traceparent's trace id.
func TestRequestID(t *testing.T) {
	d := startDaemon(t, Config{AuthToken: obsToken})
	auth := []string{"Authorization", "Bearer " + obsToken}
	for _, tc := range []struct{ sent, want string }{
		{"abc-123_x.y:z+/=@", "abc-123_x.y:z+/=@"},
		{strings.Repeat("a", 128), strings.Repeat("a", 128)},
		{strings.Repeat("a", 129), ""},
		{"has space", ""},
		{"quote\"", ""},
		{"uni\u00e9", ""},
		{"", ""},
	} {
		hdr := auth
		if tc.sent != "" {
			hdr = append(append([]string(nil), auth...), "X-Request-Id", tc.sent)
		}
		resp, _ := d.do(t, "GET", "/health", "", hdr...)
		got := resp.Header.Get("X-Request-Id")
		if tc.want != "" && got != tc.want || tc.want == "" && !hex32.MatchString(got) {
			t.Errorf("sent %q: X-Request-Id %q", tc.sent, got)
		}
	}
	// Two requests without an id get different ones.
	r1, _ := d.do(t, "GET", "/nowhere", "")
	r2, _ := d.do(t, "GET", "/nowhere", "")
	if a, b := r1.Header.Get("X-Request-Id"), r2.Header.Get("X-Request-Id"); a == b || !hex32.MatchString(a) {
		t.Errorf("ids %q and %q", a, b)
	}
	// Refusals before the route ran carry it too.
	if resp, _ := d.do(t, "GET", "/v1/fs/file?path=a", "", "X-Request-Id", "refused-1"); resp.StatusCode != 401 ||
		resp.Header.Get("X-Request-Id") != "refused-1" {
		t.Errorf("401: %d %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
	}

	// The log lines of a request carry its id and trace id.
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if code, _ := d.post(t, toolCall("read_text_file", `{"path":"a"}`), "X-Request-Id", "logged-1", "Traceparent", tp); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	lines := 0
	for _, l := range strings.Split(d.log.String(), "\n") {
		if strings.Contains(l, "request_id=logged-1") {
			lines++
			if !strings.Contains(l, "trace_id=4bf92f3577b34da6a3ce929d0e0e4736") {
				t.Errorf("line without the trace id: %s", l)
			}
		}
	}
	if lines < 2 { // "daemon: /mcp refused" and the access line
		t.Errorf("%d lines with the request id:\n%s", lines, d.log.String())
	}

	// The /ssh upgrade's 101 carries it.
	c, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /ssh HTTP/1.1\r\nHost: "+d.addr+"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: MDEyMzQ1Njc4OWFiY2RlZg==\r\nSec-WebSocket-Version: 13\r\nX-Request-Id: upgrade-7\r\n"+
		"Authorization: Bearer "+obsToken+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 || resp.Header.Get("X-Request-Id") != "upgrade-7" {
		t.Errorf("upgrade: %d, X-Request-Id %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
	}
}

func TestParseTraceparent(t *testing.T) {
	const trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for _, tc := range []struct{ h, want string }{
		{"00-" + trace + "-" + parent + "-01", trace},
		{"00-" + trace + "-" + parent + "-00", trace},
		{"01-" + trace + "-" + parent + "-01-more", trace}, // a later version may add fields
		{"01-" + trace + "-" + parent + "-01", trace},
		{"00-" + trace + "-" + parent + "-01-more", ""}, // version 00 has exactly four
		{"01-" + trace + "-" + parent + "-01more", ""},
		{"ff-" + trace + "-" + parent + "-01", ""},
		{"00-" + strings.ToUpper(trace) + "-" + parent + "-01", ""},
		{"00-00000000000000000000000000000000-" + parent + "-01", ""},
		{"00-" + trace + "-0000000000000000-01", ""},
		{"00-" + trace + "-" + parent + "-0g", ""},
		{"00_" + trace + "-" + parent + "-01", ""},
		{"00-" + trace[:31] + "-" + parent + "-01", ""},
		{"", ""},
	} {
		if got := parseTraceparent(tc.h); got != tc.want {
			t.Errorf("parseTraceparent(%q) = %q, want %q", tc.h, got, tc.want)
		}
	}
}

func FuzzParseTraceparent(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x")
	f.Add("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Fuzz(func(t *testing.T, h string) {
		got := parseTraceparent(h)
		if got == "" {
			return
		}
		if !hex32.MatchString(got) || got != h[3:35] || got == strings.Repeat("0", 32) {
			t.Fatalf("parseTraceparent(%q) = %q", h, got)
		}
		if h[:2] == "ff" || (h[:2] == "00" && len(h) != 55) {
			t.Fatalf("accepted %q", h)
		}
	})
}

func FuzzRequestID(f *testing.F) {
	f.Add("abc")
	f.Add("a b")
	f.Fuzz(func(t *testing.T, h string) {
		id := requestID(h)
		if id != h && !hex32.MatchString(id) {
			t.Fatalf("requestID(%q) = %q", h, id)
		}
		if len(id) == 0 || len(id) > maxRequestID || strings.ContainsAny(id, " \t\r\n\"\\") {
			t.Fatalf("requestID(%q) = %q", h, id)
		}
	})
}

// auditRecords parses the audit log: every line must be one JSON object.
func auditRecords(t *testing.T, text string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("audit line is not a JSON object: %v: %s", err, l)
		}
		for _, k := range []string{"time", "op", "tenant", "scope", "ok", "duration_ms"} {
			if _, ok := m[k]; !ok {
				t.Errorf("audit record without %q: %s", k, l)
			}
		}
		out = append(out, m)
	}
	return out
}

// find returns the records whose fields include every pair of kv.
func find(recs []map[string]any, kv ...any) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		ok := true
		for i := 0; i+1 < len(kv); i += 2 {
			if r[kv[i].(string)] != kv[i+1] {
				ok = false
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// TestAuditLog checks that commands, writes, moves and deletes through
// MCP, /v1, SSH and SFTP, tool calls and refused authentications are
// audited with the request id of the request that did them.
func TestAuditLog(t *testing.T) {
	buf := &syncBuffer{}
	d := startDaemon(t, Config{AuthToken: obsToken, AuditLog: buf})
	auth := []string{"Authorization", "Bearer " + obsToken}
	id := func(s string) []string { return append([]string{"X-Request-Id", s}, auth...) }
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	d.post(t, toolCall("exec", `{"command":"echo audited; exit 4"}`), append(id("req-exec"), "Traceparent", tp)...)
	d.post(t, toolCall("write_file", `{"path":"w.txt","content":"x"}`), id("req-write")...)
	d.post(t, toolCall("move_file", `{"source":"w.txt","destination":"m.txt"}`), id("req-move")...)
	d.post(t, toolCall("read_text_file", `{"path":"m.txt"}`), id("req-read")...)
	d.post(t, toolCall("exec", `{"command":"rm -rf /"}`), id("req-blocked")...)
	d.post(t, toolCall("write_file", `{"path":"s.txt","content":"x"}`), append(id("req-scoped"), "X-Scope-Path", "team")...)
	if resp, b := d.do(t, "PUT", "/v1/fs/file?path=v.txt", "v1 data", id("req-v1put")...); resp.StatusCode != 200 {
		t.Fatalf("PUT: %d %s", resp.StatusCode, b)
	}
	if resp, b := d.do(t, "DELETE", "/v1/fs/entry?path=v.txt", "", id("req-v1del")...); resp.StatusCode != 200 {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, b)
	}
	d.post(t, toolCall("read_text_file", `{"path":"m.txt"}`), "X-Request-Id", "req-noauth", "Authorization", "Bearer nope")

	c := sshWithID(t, d, "req-ssh")
	sess, _ := c.NewSession()
	sess.Run("echo via-wire")
	sf := sftpSession(t, c)
	f, err := sf.Create(context.Background(), "sftp.txt")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("12345"))
	f.Close()
	if err := sf.Remove(context.Background(), "sftp.txt"); err != nil {
		t.Fatal(err)
	}
	sf.Close()
	c.Close()
	d.stop() // flushes the audit log

	recs := auditRecords(t, buf.String())
	one := func(what string, kv ...any) map[string]any {
		t.Helper()
		got := find(recs, kv...)
		if len(got) != 1 {
			t.Errorf("%s: %d records match %v\n%s", what, len(got), kv, buf.String())
			return map[string]any{}
		}
		return got[0]
	}
	ex := one("MCP exec", "op", "exec", "request_id", "req-exec")
	if ex["command"] != "echo audited; exit 4" || ex["exit_code"] != 4.0 || ex["ok"] != false || ex["result"] != "failed" ||
		ex["route"] != "mcp" || ex["trace_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" || ex["limit_exceeded"] != false {
		t.Errorf("exec record: %v", ex)
	}
	one("MCP exec tool call", "op", "mcp.tool", "request_id", "req-exec", "tool", "exec", "ok", false) // exit 4: an error result
	w := one("MCP write", "op", "write", "request_id", "req-write", "path", "w.txt", "ok", true)
	if w["remote"] == "" || w["route"] != "mcp" {
		t.Errorf("write record: %v", w)
	}
	one("MCP move", "op", "rename", "request_id", "req-move", "path", "w.txt", "path2", "m.txt", "ok", true)
	one("read tool call", "op", "mcp.tool", "request_id", "req-read", "tool", "read_text_file")
	if got := find(recs, "request_id", "req-read"); len(got) != 1 {
		t.Errorf("a read is audited as its tool call only: %v", got)
	}
	one("blocked exec", "op", "exec", "request_id", "req-blocked", "result", "blocked", "ok", false)
	one("scoped write", "op", "write", "request_id", "req-scoped", "scope", "team", "path", "s.txt")
	one("scoped tool call", "op", "mcp.tool", "request_id", "req-scoped", "scope", "team")
	one("/v1 write", "op", "write", "request_id", "req-v1put", "route", "v1_fs", "path", "v.txt", "ok", true)
	one("/v1 delete", "op", "remove", "request_id", "req-v1del", "route", "v1_fs", "path", "v.txt", "ok", true)
	one("refused", "op", "auth.refused", "request_id", "req-noauth", "route", "mcp", "ok", false)
	sx := one("SSH exec", "op", "exec", "request_id", "req-ssh", "command", "echo via-wire")
	if sx["route"] != "ssh" || sx["exit_code"] != 0.0 || sx["ok"] != true {
		t.Errorf("SSH exec record: %v", sx)
	}
	sw := one("SFTP write", "op", "write", "request_id", "req-ssh", "route", "sftp", "path", "sftp.txt")
	if sw["bytes"] != 5.0 || sw["ok"] != true {
		t.Errorf("SFTP write record: %v", sw)
	}
	one("SFTP remove", "op", "remove", "request_id", "req-ssh", "route", "sftp", "path", "sftp.txt", "ok", true)
	// Nothing the daemon does for itself (a scope's directory, readiness)
	// is audited.
	if got := find(recs, "op", "mkdir"); len(got) != 0 {
		t.Errorf("internal mkdir audited: %v", got)
	}
}

// failingWriter fails every write.
type failingWriter struct {
	mu sync.Mutex
	n  int
}

func (f *failingWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
	return 0, errors.New("no space left on device")
}

// TestAuditLogWriteError checks that a failing audit writer is logged at
// Error once, that requests go on, and that the lost records are counted.
func TestAuditLogWriteError(t *testing.T) {
	fw := &failingWriter{}
	d := startDaemon(t, Config{AuthToken: obsToken, AuditLog: fw})
	auth := []string{"Authorization", "Bearer " + obsToken}
	for i := 0; i < 3; i++ {
		if code, _ := d.post(t, toolCall("write_file", `{"path":"a.txt","content":"x"}`), auth...); code != 200 {
			t.Fatalf("write %d: %d", i, code)
		}
		d.audit.kick <- struct{}{} // write now, not in a second
		deadline := time.Now().Add(10 * time.Second)
		for value(d.scrape(t), "agentbe_audit_dropped_total") < float64(2*(i+1)) {
			if time.Now().After(deadline) {
				t.Fatal("dropped records not counted")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if n := strings.Count(d.log.String(), "audit log write failed"); n != 1 {
		t.Errorf("write failure logged %d times:\n%s", n, d.log.String())
	}
	if !strings.Contains(d.log.String(), "level=ERROR") {
		t.Error("not at Error")
	}
}

// blockedWriter never returns until released.
type blockedWriter struct{ release chan struct{} }

func (b *blockedWriter) Write(p []byte) (int, error) { <-b.release; return len(p), nil }

// TestAuditLogStuckWriter checks that a writer that never returns blocks
// no request.
func TestAuditLogStuckWriter(t *testing.T) {
	bw := &blockedWriter{release: make(chan struct{})}
	defer close(bw.release)
	d := startDaemon(t, Config{AuthToken: obsToken, AuditLog: bw})
	auth := []string{"Authorization", "Bearer " + obsToken}
	d.post(t, toolCall("write_file", `{"path":"a.txt","content":"x"}`), auth...)
	d.audit.kick <- struct{}{} // the writer is now stuck in Write
	for i := 0; i < 50; i++ {
		if code, _ := d.post(t, toolCall("write_file", `{"path":"a.txt","content":"x"}`), auth...); code != 200 {
			t.Fatalf("write %d: %d", i, code)
		}
	}
}

// TestLogJSON checks that with a JSON handler every line the daemon
// writes for a request (the refusal and the access line) is one JSON
// object carrying the request id.
func TestLogJSON(t *testing.T) {
	buf := &syncBuffer{}
	d := startDaemon(t, Config{AuthToken: obsToken,
		Logger: slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	d.post(t, toolCall("read_text_file", `{"path":"a"}`), "X-Request-Id", "json-1")
	d.post(t, toolCall("read_text_file", `{"path":"a"}`), "X-Request-Id", "json-2", "Authorization", "Bearer "+obsToken)
	d.stop()
	seen := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not one JSON object: %v: %s", err, l)
		}
		if id, ok := m["request_id"].(string); ok {
			seen[id]++
		}
	}
	if seen["json-1"] < 2 || seen["json-2"] < 1 {
		t.Errorf("request ids in the log: %v\n%s", seen, buf.String())
	}
	for _, want := range []string{`"msg":"daemon: shutting down"`, `"msg":"daemon: shut down"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("no %s line", want)
		}
	}
}

// TestAuditTenant checks that the tenant authentication records in the
// request's info reaches its audit records, and that a request without
// one has an empty tenant.
func TestAuditTenant(t *testing.T) {
	buf := &syncBuffer{}
	s, err := New(Config{RootDir: t.TempDir(), DisableSSHWS: true, Isolation: "none", AuditLog: buf,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	info := &requestInfo{ID: "t-1", Remote: "192.0.2.1:1234", Route: routeMCP}
	info.setTenant("acme")
	info.setScope("acme/project")
	s.toolCalled(withRequestInfo(context.Background(), info), "list_directory", false, time.Millisecond)
	s.toolCalled(withRequestInfo(context.Background(), &requestInfo{ID: "t-2"}), "list_directory", true, 0)
	s.toolCalled(internal(context.Background()), "list_directory", false, 0) // not audited
	s.Close()
	recs := auditRecords(t, buf.String())
	if len(recs) != 2 {
		t.Fatalf("%d records:\n%s", len(recs), buf.String())
	}
	if r := recs[0]; r["tenant"] != "acme" || r["scope"] != "acme/project" || r["request_id"] != "t-1" ||
		r["remote"] != "192.0.2.1:1234" || r["route"] != "mcp" || r["ok"] != true || r["duration_ms"] != 1.0 {
		t.Errorf("record: %v", r)
	}
	if r := recs[1]; r["tenant"] != "" || r["scope"] != "" || r["ok"] != false {
		t.Errorf("record: %v", r)
	}
	var nilInfo *requestInfo
	if nilInfo.tenantName() != "" || nilInfo.scopeName() != "" {
		t.Error("nil info")
	}
}

// TestAuditACP checks that ACP instances started and stopped are audited
// with the request that did it, and those still running at shutdown with
// reason "closed".
func TestAuditACP(t *testing.T) {
	buf := &syncBuffer{}
	d := startDaemon(t, Config{AuthToken: obsToken, AuditLog: buf, DisableSSHWS: true,
		ACPAgents: []acp.Agent{{ID: "cat", Command: "exec cat"},
			{ID: "inst", Command: "exec cat", Install: "echo installing", Check: "never-there"}}})
	auth := []string{"Authorization", "Bearer " + obsToken, "Content-Type", "application/json"}
	note := `{"jsonrpc":"2.0","method":"ping"}`
	if resp, b := d.do(t, "POST", "/v1/acp/s3?agent=inst", note, append([]string{"X-Request-Id", "start-s3"}, auth...)...); resp.StatusCode != 202 {
		t.Fatalf("POST s3: %d %s", resp.StatusCode, b)
	}
	for _, id := range []string{"s1", "s2"} {
		if resp, b := d.do(t, "POST", "/v1/acp/"+id+"?agent=cat", note, append([]string{"X-Request-Id", "start-" + id}, auth...)...); resp.StatusCode != 202 {
			t.Fatalf("POST %s: %d %s", id, resp.StatusCode, b)
		}
	}
	if resp, b := d.do(t, "DELETE", "/v1/acp/s1", "", append([]string{"X-Request-Id", "stop-s1"}, auth...)...); resp.StatusCode != 204 {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, b)
	}
	d.stop()
	recs := auditRecords(t, buf.String())
	for _, want := range [][]any{
		{"op", "acp.start", "request_id", "start-s1", "server_id", "s1", "agent", "cat", "route", "v1_acp"},
		{"op", "acp.start", "request_id", "start-s2", "server_id", "s2"},
		{"op", "acp.stop", "request_id", "stop-s1", "server_id", "s1", "reason", "deleted"},
		{"op", "acp.stop", "server_id", "s2", "reason", "closed"},
		// The agent's install command is audited with the request that
		// started the instance.
		{"op", "exec", "command", "echo installing", "request_id", "start-s3", "ok", true},
	} {
		if got := find(recs, want...); len(got) != 1 {
			t.Errorf("%d records match %v:\n%s", len(got), want, buf.String())
		}
	}
}
