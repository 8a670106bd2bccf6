package daemon

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestShutdownEndsMCPListen: a subscriptions/listen following a running
// exec task gets its graceful result when the daemon shuts down, instead
// of being cut when the shutdown times out.
func TestShutdownEndsMCPListen(t *testing.T) {
	d := startDaemon(t, Config{ShutdownTimeout: 30 * time.Second})
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	open := func(method, name, params string) *bufio.Reader {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, d.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return bufio.NewReader(resp.Body)
	}
	next := func(br *bufio.Reader) map[string]any {
		t.Helper()
		for {
			l, err := br.ReadString('\n')
			if err != nil && l == "" {
				t.Fatalf("stream ended without the listen's result: %v", err)
			}
			l = strings.TrimSpace(l)
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				l = d
			}
			if strings.HasPrefix(l, "{") {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
		}
	}
	res, _ := next(open("tools/call", "exec", `{"name":"exec","arguments":{"command":"sleep 30"},`+meta+`}`))["result"].(map[string]any)
	id, _ := res["taskId"].(string)
	if id == "" {
		t.Fatalf("exec was not answered with a task: %v", res)
	}
	br := open("subscriptions/listen", "", `{"notifications":{"taskIds":["`+id+`"]},`+meta+`}`)
	if m := next(br); m["method"] != "notifications/subscriptions/acknowledged" {
		t.Fatalf("%v", m)
	}
	if m := next(br); m["method"] != "notifications/tasks" {
		t.Fatalf("%v", m)
	}
	stopped := make(chan struct{})
	go func() { d.stop(); close(stopped) }()
	if m := next(br); m["id"] != 1.0 || m["result"] == nil {
		t.Fatalf("want the listen's result, got %v", m)
	}
	<-stopped
}
