package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDaemonJSONLogAndAudit runs the real binary with --log-format json
// and --audit-log: every line it writes to stderr (the library's own
// lines included) is one JSON object, and the audit file holds the exec
// and the write of two MCP requests with their request ids, flushed at
// shutdown.
func TestDaemonJSONLogAndAudit(t *testing.T) {
	bin := cliBinary(t)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	d, _ := startDaemonBinary(t, bin, "--log-format", "json", "--log-level", "debug", "--audit-log", audit,
		"--isolation", "auto")
	call := func(id, tool, args string) {
		req, _ := http.NewRequest("POST", "http://127.0.0.1:"+strconv.Itoa(d.port)+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+`}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer s3cret-token-of-the-cli-tests-0123")
		req.Header.Set("X-Request-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") != id {
			t.Fatalf("%s: %d %q", tool, resp.StatusCode, resp.Header.Get("X-Request-Id"))
		}
	}
	call("cli-exec", "exec", `{"command":"echo hi"}`)
	call("cli-write", "write_file", `{"path":"f.txt","content":"x"}`)
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("daemon still running 20 s after SIGTERM")
	}
	lines := strings.Split(strings.TrimSpace(d.stderr.String()), "\n")
	msgs := map[string]bool{}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("stderr line is not one JSON object: %v: %s", err, l)
			continue
		}
		msg, _ := m["msg"].(string)
		msgs[msg] = true
		if msg == "http" && m["request_id"] == nil {
			t.Errorf("access line without request_id: %s", l)
		}
	}
	for _, want := range []string{"daemon: listening", "daemon: shutting down", "daemon: shut down", "http"} {
		if !msgs[want] {
			t.Errorf("no %q line in:\n%s", want, d.stderr.String())
		}
	}
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(audit); fi.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode %v", fi.Mode().Perm())
	}
	found := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("audit line: %v: %s", err, l)
		}
		found[m["op"].(string)+" "+m["request_id"].(string)] = true
	}
	for _, want := range []string{"exec cli-exec", "mcp.tool cli-exec", "write cli-write", "mcp.tool cli-write"} {
		if !found[want] {
			t.Errorf("no audit record %q in:\n%s", want, b)
		}
	}
}
