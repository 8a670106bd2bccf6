package daemon

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/agentbe/agent-backend/internal/testenv"
)

func (d *testDaemon) v1(t *testing.T, method, path, body string, hdr ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, d.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// TestDaemonProcessesAuth: /v1/processes needs the bearer token like every
// /v1 route; the terminal WebSocket alone also takes it as ?access_token=.
func TestDaemonProcessesAuth(t *testing.T) {
	d := startDaemon(t, Config{AuthToken: "tok"})
	auth := []string{"Authorization", "Bearer tok"}
	if st, _ := d.v1(t, "GET", "/v1/processes", ""); st != 401 {
		t.Errorf("no token = %d", st)
	}
	if st, _ := d.v1(t, "GET", "/v1/processes?access_token=tok", ""); st != 401 {
		t.Errorf("access_token on a plain route = %d", st)
	}
	st, p := d.v1(t, "POST", "/v1/processes", `{"command":"sh","args":["-i"],"tty":true}`, auth...)
	if st != 200 {
		t.Fatalf("start = %d %v", st, p)
	}
	id := p["id"].(string)
	defer d.v1(t, "POST", "/v1/processes/"+id+"/kill", "", auth...)
	ws := "ws" + strings.TrimPrefix(d.url, "http") + "/v1/processes/" + id + "/terminal/ws"
	if c, err := websocket.Dial(ws+"?access_token=wrong", "", d.url); err == nil {
		c.Close()
		t.Error("wrong access_token accepted")
	}
	c, err := websocket.Dial(ws+"?access_token=tok", "", d.url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var first string
	if err := websocket.Message.Receive(c, &first); err != nil || !strings.Contains(first, `"type":"ready"`) {
		t.Fatalf("first frame %q %v", first, err)
	}
}

// TestDaemonProcessesScoped: a process started in one X-Scope-Path is
// invisible to another, runs in its scope's directory, and the daemon's
// Close leaves no process behind.
func TestDaemonProcessesScoped(t *testing.T) {
	d := startDaemon(t, Config{})
	marker := testenv.SleepMarker()
	st, p := d.v1(t, "POST", "/v1/processes", `{"command":"sleep","args":["`+marker+`"]}`, "X-Scope-Path", "t1")
	if st != 200 {
		t.Fatalf("start = %d %v", st, p)
	}
	id := p["id"].(string)
	if _, m := d.v1(t, "GET", "/v1/processes", "", "X-Scope-Path", "t2"); len(m["processes"].([]any)) != 0 {
		t.Errorf("t2 lists %v", m)
	}
	if st, _ := d.v1(t, "POST", "/v1/processes/"+id+"/kill", "", "X-Scope-Path", "t2"); st != 404 {
		t.Errorf("t2 kills t1's process: %d", st)
	}
	if st, _ := d.v1(t, "GET", "/v1/processes/"+id, ""); st != 404 {
		t.Errorf("the unscoped workspace sees t1's process: %d", st)
	}
	st, r := d.v1(t, "POST", "/v1/processes/run", `{"command":"touch","args":["made-here"]}`, "X-Scope-Path", "t1")
	if _, err := os.Stat(filepath.Join(d.cfg.RootDir, "t1", "made-here")); st != 200 || err != nil {
		t.Errorf("run in scope = %d %v: %v", st, r, err)
	}
	for len(testenv.ProcessesWith(marker)) == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	d.stop()
	deadline := time.Now().Add(10 * time.Second)
	for len(testenv.ProcessesWith(marker)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := testenv.ProcessesWith(marker); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
