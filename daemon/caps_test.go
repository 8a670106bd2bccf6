package daemon

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/acp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/net/websocket"
)

// TestFullDaemonAnswers503: beyond MaxSSHConns an /ssh upgrade, and beyond
// MaxInFlight an HTTP request on /mcp or /v1, is answered (before any
// upgrade) 503 with Retry-After and a JSON message saying the daemon is
// full; freed slots serve again.
func TestFullDaemonAnswers503(t *testing.T) {
	d := startDaemon(t, Config{MaxSSHConns: 1, MaxInFlight: 1})
	check := func(what string, status int, hdr http.Header, body string) {
		t.Helper()
		var b errorBody
		if status != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" ||
			json.Unmarshal([]byte(body), &b) != nil || !strings.HasPrefix(b.Message, "daemon full") {
			t.Errorf("%s: %d Retry-After %q %s", what, status, hdr.Get("Retry-After"), body)
		}
	}
	held := sshClient(t, d, "", "")
	status, hdr, body := rawResponse(t, d.addr, rebindRoute{name: "ssh", method: "GET", target: "/ssh", upgrade: true})
	check("/ssh", status, hdr, body)

	// Hold the only in-flight slot with a command that waits for a gate.
	gate := filepath.Join(d.RootDir(), "gate")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.post(t, toolCall("exec", `{"command":"touch started; while [ -e gate ]; do sleep 0.05; done"}`))
	}()
	waitFor(t, func() bool {
		_, err := os.Stat(filepath.Join(d.RootDir(), "started"))
		return err == nil
	})
	for _, rt := range []rebindRoute{
		{name: "mcp", method: "POST", target: "/mcp", body: initBody},
		{name: "v1", method: "GET", target: "/v1/fs/entries?path=."},
		{name: "root", method: "GET", target: "/"},
	} {
		status, hdr, body := rawResponse(t, d.addr, rt)
		check(rt.name, status, hdr, body)
	}
	if status, _, body := rawResponse(t, d.addr, rebindRoute{name: "health", method: "GET", target: "/health"}); status != 200 {
		t.Errorf("/health while full: %d %s", status, body)
	}
	os.Remove(gate)
	wg.Wait()
	held.Close()
	// The slot is freed once the server has seen the connection end.
	again := sshClientWhenFree(t, d, "")
	defer again.Close()
	if out, err := runSSH(t, again, "echo again", ""); err != nil || out != "again\n" {
		t.Errorf("/ssh after a slot was freed: %q %v", out, err)
	}
}

// sshClientWhenFree connects an SSH client through /ssh (query appended),
// retrying while the daemon answers the upgrade 503: a connection slot
// just given up is freed once the server has seen the connection end.
func sshClientWhenFree(t *testing.T, d *testDaemon, query string) *ssh.Client {
	t.Helper()
	var c *ssh.Client
	waitFor(t, func() bool {
		cfg, _ := websocket.NewConfig("ws://"+d.addr+"/ssh"+query, "http://"+d.addr)
		ws, err := websocket.DialConfig(cfg)
		if err != nil {
			return false
		}
		ws.PayloadType = websocket.BinaryFrame
		conn, chans, reqs, err := ssh.NewClientConn(ws, "daemon", &ssh.ClientConfig{User: "a",
			HostKeyCallback: ssh.InsecureIgnoreHostKey()})
		if err != nil {
			t.Fatal(err)
		}
		c = ssh.NewClient(conn, chans, reqs)
		return true
	})
	return c
}

// waitFor polls cond until it holds, failing the test after 20 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestACPInstanceCap: Config.MaxACPInstances reaches the ACP proxy.
func TestACPInstanceCap(t *testing.T) {
	d := startDaemon(t, Config{DisableSSHWS: true, MaxACPInstances: 1,
		ACPAgents: []acp.Agent{{ID: "cat", Command: "exec cat"}}})
	start := func(id string) (int, string) {
		st, _, body := rawResponse(t, d.addr, rebindRoute{name: "acp", method: "POST",
			target: "/v1/acp/" + id + "?agent=cat", body: `{"jsonrpc":"2.0","method":"ping"}`})
		return st, body
	}
	if st, body := start("one"); st != http.StatusAccepted {
		t.Fatalf("first instance: %d %s", st, body)
	}
	if st, body := start("two"); st != http.StatusTooManyRequests {
		t.Fatalf("second instance: %d %s", st, body)
	}
	if st, _, body := rawResponse(t, d.addr, rebindRoute{name: "acp", method: "DELETE", target: "/v1/acp/one"}); st >= 300 {
		t.Fatalf("delete: %d %s", st, body)
	}
	if st, body := start("two"); st != http.StatusAccepted {
		t.Fatalf("after delete: %d %s", st, body)
	}
}
