//go:build linux

package daemon

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/metrics/metricstest"
)

// TestTenantMetrics: /metrics counts requests (by status class), refused
// credentials, 429s and commands per tenant; requests without a tenant
// (the operator's, and those with an unknown token) count under
// tenant="", and no other tenant label appears, whatever clients send.
func TestTenantMetrics(t *testing.T) {
	d := startTenantDaemon(t, Config{}, `{"mcpInFlight":1}`)
	scrape := func() metricstest.Scrape {
		t.Helper()
		st, _, body := d.call(t, "GET", "/metrics", "op", "", nil)
		if st != 200 {
			t.Fatalf("/metrics: %d %s", st, body)
		}
		s, err := metricstest.Parse(body)
		if err != nil {
			t.Fatalf("invalid exposition: %v\n%s", err, body)
		}
		return s
	}
	before := scrape()

	for _, c := range []string{toolCall("write_file", `{"path":"a.txt","content":"x"}`),
		toolCall("exec", `{"command":"echo hi"}`), toolCall("exec", `{"command":"exit 3"}`)} {
		if st, _, body := d.call(t, "POST", "/mcp", aliceTok, "", strings.NewReader(c)); st != 200 {
			t.Fatalf("alice: %d %s", st, body)
		}
	}
	// A command over SSH counts as alice's too.
	sc := sshClient(t, d, "", "Bearer "+aliceTok)
	if out, err := runSSH(t, sc, "echo via-wire", ""); err != nil || out != "via-wire\n" {
		t.Fatalf("alice over SSH: %q %v", out, err)
	}
	sc.Close()
	if st, _, _ := d.call(t, "POST", "/mcp", aliceTok, "users/bob", strings.NewReader(toolCall("list_directory", `{"path":"."}`))); st != 403 {
		t.Fatalf("forged scope: %d", st)
	}
	if st, _, _ := d.call(t, "GET", "/metrics", aliceTok, "", nil); st != 401 {
		t.Fatalf("alice's /metrics: %d", st)
	}
	// alice at her one request in flight: a held watch stream, then 429.
	conn, resp, s := rawWatch(t, d, aliceTok, "", 0)
	if resp.StatusCode != 200 {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	s.next(t)
	if st, _, _ := d.call(t, "GET", "/v1/fs/entries?path=.", aliceTok, "", nil); st != 429 {
		t.Fatalf("alice beyond her share: %d", st)
	}
	conn.Close()
	if st, _, _ := d.call(t, "GET", "/v1/processes", bobTok, "", nil); st != 200 {
		t.Fatalf("bob: %d", st)
	}
	if st, _, _ := d.call(t, "POST", "/mcp", "forged-"+aliceTok, "", strings.NewReader(toolCall("list_directory", `{"path":"."}`))); st != 401 {
		t.Fatalf("unknown token: %d", st)
	}

	want := []struct {
		name   string
		labels []string
		delta  float64
	}{
		{"agentbe_tenant_http_requests_total", []string{"tenant", "alice", "class", "2xx"}, 4}, // 3 tool calls, the stream
		{"agentbe_tenant_http_requests_total", []string{"tenant", "alice", "class", "1xx"}, 1}, // the /ssh upgrade
		{"agentbe_tenant_http_requests_total", []string{"tenant", "alice", "class", "4xx"}, 3}, // 403, 401, 429
		{"agentbe_tenant_http_requests_total", []string{"tenant", "bob", "class", "2xx"}, 1},
		{"agentbe_tenant_http_requests_total", []string{"tenant", "", "class", "4xx"}, 1},
		{"agentbe_tenant_auth_refused_total", []string{"tenant", "alice"}, 1},
		{"agentbe_tenant_auth_refused_total", []string{"tenant", ""}, 1},
		{"agentbe_tenant_throttled_total", []string{"tenant", "alice"}, 1},
		{"agentbe_tenant_throttled_total", []string{"tenant", "bob"}, 0},
		{"agentbe_tenant_exec_total", []string{"tenant", "alice", "result", "ok"}, 2}, // MCP and SSH
		{"agentbe_tenant_exec_total", []string{"tenant", "alice", "result", "failed"}, 1},
		{"agentbe_tenant_exec_total", []string{"tenant", "bob", "result", "ok"}, 0},
	}
	// The stream is counted once its handler has seen the client go.
	var after metricstest.Scrape
	var bad []string
	for deadline := time.Now().Add(20 * time.Second); ; {
		after, bad = scrape(), nil
		for _, w := range want {
			if got := value(after, w.name, w.labels...) - value(before, w.name, w.labels...); got != w.delta {
				bad = append(bad, w.name+"{"+strings.Join(w.labels, ",")+"}: "+strconv.FormatFloat(got, 'g', -1, 64))
			}
		}
		if len(bad) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, b := range bad {
		t.Errorf("delta %s", b)
	}
	if v := value(after, "agentbe_tenant_http_requests_total", "tenant", "", "class", "2xx"); v < 1 {
		t.Errorf("the operator's scrapes are not counted under tenant=\"\": %v", v)
	}
	for name, f := range after {
		if !strings.HasPrefix(name, "agentbe_tenant_") {
			continue
		}
		for _, smp := range f.Samples {
			if tn := smp.Labels["tenant"]; tn != "" && tn != "alice" && tn != "bob" {
				t.Errorf("%s has tenant %q", name, tn)
			}
		}
	}
}

// TestTenantAccessLog: the daemon's access line of a tenant's request
// names the tenant and carries the traceparent's trace id.
func TestTenantAccessLog(t *testing.T) {
	d := startTenantDaemon(t, Config{DisableSSHWS: true}, `{}`)
	req, _ := http.NewRequest("GET", d.url+"/v1/fs/file?path=missing.txt", nil)
	req.Header.Set("Authorization", "Bearer "+aliceTok)
	req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	req.Header.Set("X-Request-Id", "tenant-line-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, l := range strings.Split(d.log.String(), "\n") {
			if strings.Contains(l, "msg=http") && strings.Contains(l, "request_id=tenant-line-1") {
				if !strings.Contains(l, "tenant=alice") || !strings.Contains(l, "trace_id=4bf92f3577b34da6a3ce929d0e0e4736") {
					t.Fatalf("access line: %s", l)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no access line:\n%s", d.log.String())
		}
	}
}
