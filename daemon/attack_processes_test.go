package daemon

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// TestTenantForeignProcess: bob knows (guessed or leaked) the id of one
// of alice's processes and tries every process route on it — get, logs
// (plain and followed), input, stop, kill, delete, resize, the terminal
// WebSocket — by its id and by variants of it, with and without an
// X-Scope-Path of alice's scope; so does the operator with an
// X-Scope-Path of alice's scope. Each gets 404 naming nothing of alice's
// (or 403 for bob's forged scope), and alice's process runs on untouched:
// no input reached it.
func TestTenantForeignProcess(t *testing.T) {
	d := startTenantDaemon(t, Config{DisableSSHWS: true}, `{}`)
	const secret = "alice-secret-argument"
	id := d.procStart(t, aliceTok, `{"command":"sh","args":["-c","echo `+secret+`; exec cat"],"tty":true,"interactive":true}`)
	defer d.call(t, "POST", "/v1/processes/"+id+"/kill", aliceTok, "", nil)
	for !strings.Contains(d.procLogs(t, aliceTok, id), secret) {
		time.Sleep(20 * time.Millisecond)
	}

	type attempt struct{ method, path, body string }
	var attempts []attempt
	for _, pid := range []string{id, url.PathEscape(id + "\x00"), id + "%2F", "..%2F" + id, strings.ToUpper(id), id + "0"} {
		p := "/v1/processes/" + pid
		attempts = append(attempts,
			attempt{"GET", p, ""},
			attempt{"GET", p + "/logs", ""},
			attempt{"GET", p + "/logs?follow=true", ""},
			attempt{"POST", p + "/input", `{"data":"bob was here\n"}`},
			attempt{"POST", p + "/terminal/resize", `{"cols":10,"rows":5}`},
			attempt{"POST", p + "/stop", ""},
			attempt{"POST", p + "/kill", ""},
			attempt{"DELETE", p, ""},
			attempt{"GET", p + "/terminal/ws", ""},
		)
	}
	check := func(who, tok, scope string, want int) {
		t.Helper()
		for _, a := range attempts {
			// A bounded client: a followed log that opened would never end.
			req, _ := http.NewRequest(a.method, d.url+a.path, strings.NewReader(a.body))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/json")
			if scope != "" {
				req.Header.Set("X-Scope-Path", scope)
			}
			r, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
			if err != nil {
				t.Errorf("%s %s %s: %v", who, a.method, a.path, err)
				continue
			}
			b, err := io.ReadAll(r.Body)
			r.Body.Close()
			st, resp := r.StatusCode, string(b)
			if err != nil {
				t.Errorf("%s %s %s: %d, reading: %v", who, a.method, a.path, st, err)
				continue
			}
			if st != want || strings.Contains(resp, secret) || strings.Contains(resp, `"running"`) || strings.Contains(resp, "alice") {
				t.Errorf("%s %s %s: %d %s", who, a.method, a.path, st, resp)
			}
		}
		st, _, resp := d.call(t, "GET", "/v1/processes", tok, scope, nil)
		if strings.Contains(resp, secret) {
			t.Errorf("%s lists alice's process: %d %s", who, st, resp)
		}
		cfg, err := websocket.NewConfig("ws"+strings.TrimPrefix(d.url, "http")+"/v1/processes/"+id+"/terminal/ws?access_token="+url.QueryEscape(tok), d.url)
		if err != nil {
			t.Fatal(err)
		}
		if scope != "" {
			cfg.Header = http.Header{"X-Scope-Path": {scope}}
		}
		if ws, err := websocket.DialConfig(cfg); err == nil {
			ws.Close()
			t.Errorf("%s attached to alice's terminal", who)
		}
	}
	check("bob", bobTok, "", http.StatusNotFound)
	check("bob in users/bob", bobTok, "users/bob", http.StatusNotFound)
	check("bob naming alice's scope", bobTok, "users/alice", http.StatusForbidden)
	check("the operator in alice's scope", "op", "users/alice", http.StatusNotFound)
	check("the operator", "op", "", http.StatusNotFound)

	st, _, resp := d.call(t, "GET", "/v1/processes/"+id, aliceTok, "", nil)
	if st != 200 || !strings.Contains(resp, `"status":"running"`) {
		t.Fatalf("alice's process after the attempts: %d %s", st, resp)
	}
	if out := d.procLogs(t, aliceTok, id); strings.Contains(out, "bob") {
		t.Errorf("bob's input reached alice's process: %q", out)
	}
	// bob's own first process may take the same id: in his space, it is his.
	bobs := d.procStart(t, bobTok, `{"command":"sleep","args":["30"]}`)
	defer d.call(t, "POST", "/v1/processes/"+bobs+"/kill", bobTok, "", nil)
	if st, _, resp := d.call(t, "GET", "/v1/processes/"+bobs, bobTok, "", nil); st != 200 || strings.Contains(resp, secret) || !strings.Contains(resp, "sleep") {
		t.Errorf("bob's own %s: %d %s", bobs, st, resp)
	}
}

// procLogs returns the decoded combined output of process id.
func (d *testDaemon) procLogs(t *testing.T, tok, id string) string {
	t.Helper()
	st, _, body := d.call(t, "GET", "/v1/processes/"+id+"/logs", tok, "", nil)
	if st != 200 {
		t.Fatalf("logs of %s: %d %s", id, st, body)
	}
	var lr struct {
		Entries []struct{ Data string }
	}
	if err := json.Unmarshal([]byte(body), &lr); err != nil {
		t.Fatalf("logs of %s: %v", id, err)
	}
	var out strings.Builder
	for _, e := range lr.Entries {
		b, _ := base64.StdEncoding.DecodeString(e.Data)
		out.Write(b)
	}
	return out.String()
}

// procWait polls process id of tok until it has exited.
func (d *testDaemon) procWait(t *testing.T, tok, id string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		_, _, body := d.call(t, "GET", "/v1/processes/"+id, tok, "", nil)
		if strings.Contains(body, `"status":"exited"`) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("process %s did not exit", id)
}

// procStart starts a process for tok and returns its id.
func (d *testDaemon) procStart(t *testing.T, tok, body string) string {
	t.Helper()
	st, _, resp := d.call(t, "POST", "/v1/processes", tok, "", strings.NewReader(body))
	var p struct{ ID string }
	if st != 200 || json.Unmarshal([]byte(resp), &p) != nil || p.ID == "" {
		t.Fatalf("start %s: %d %s", body, st, resp)
	}
	return p.ID
}

// TestTenantProcessCwdEscape: alice names bob's scope as the working
// directory of her processes — relative, absolute in the workspace, by
// its host path, and through links she made in her scope pointing there —
// on POST /v1/processes/run and POST /v1/processes, and reads bob's
// canary by relative paths from there. Each is refused or stays in her
// scope: bob's canary never appears.
func TestTenantProcessCwdEscape(t *testing.T) {
	d := startTenantDaemon(t, Config{DisableSSHWS: true}, `{}`)
	root := d.RootDir()
	canary := "BOB-CANARY-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	bobDir := filepath.Join(root, "users", "bob")
	if err := os.MkdirAll(bobDir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(bobDir, "secret.txt"), []byte(canary), 0o644)
	if st, _, body := d.call(t, "PUT", "/v1/fs/file?path=mk.sh", aliceTok, "", strings.NewReader("ln -s ../bob bobdir; ln -s "+bobDir+" hostlink; ln -s / rootlink\n")); st != 200 {
		t.Fatalf("upload: %d %s", st, body)
	}
	if st, _, body := d.call(t, "POST", "/v1/processes/run", aliceTok, "", strings.NewReader(`{"command":"sh","args":["mk.sh"]}`)); st != 200 {
		t.Fatalf("links: %d %s", st, body)
	}
	if _, err := os.Lstat(filepath.Join(root, "users/alice/bobdir")); err != nil {
		t.Fatalf("alice's link was not made: %v", err)
	}
	for _, cwd := range []string{"../bob", "../../users/bob", "/users/bob", bobDir, "/tmp/agentbe-workspace/../bob", "bobdir", "hostlink",
		"rootlink" + bobDir, ".."} {
		// (A refusal may quote the cwd it was given, host path or not.)
		leak := func(s string) bool {
			return strings.Contains(s, canary) || strings.Contains(strings.ReplaceAll(s, cwd, ""), root)
		}
		q, _ := json.Marshal(map[string]any{"command": "sh", "args": []string{"-c", "cat secret.txt ../bob/secret.txt; pwd; ls"}, "cwd": cwd})
		st, _, body := d.call(t, "POST", "/v1/processes/run", aliceTok, "", strings.NewReader(string(q)))
		if leak(body) {
			t.Errorf("run in %s: %d %s", cwd, st, body)
		}
		st, _, body = d.call(t, "POST", "/v1/processes", aliceTok, "", strings.NewReader(string(q)))
		if leak(body) {
			t.Errorf("start in %s: %d %s", cwd, st, body)
		}
		if st != 200 {
			continue
		}
		var p struct{ ID string }
		json.Unmarshal([]byte(body), &p)
		d.procWait(t, aliceTok, p.ID)
		if out := d.procLogs(t, aliceTok, p.ID); leak(out) {
			t.Errorf("process in %s: %q", cwd, out)
		}
	}
}

// TestTerminalHostileFrames: a tenant's own terminal WebSocket gets frames
// a hostile client makes up — sizes negative, zero and beyond 16 bits,
// input in a bad encoding, garbage, an unknown type, a frame beyond the
// size limit: the bad ones get error frames or end the session, the
// terminal keeps a sane size, and the process and the daemon live on.
func TestTerminalHostileFrames(t *testing.T) {
	d := startTenantDaemon(t, Config{DisableSSHWS: true}, `{}`)
	id := d.procStart(t, aliceTok, `{"command":"sh","args":["-i"],"tty":true,"interactive":true}`)
	defer d.call(t, "POST", "/v1/processes/"+id+"/kill", aliceTok, "", nil)
	dial := func() *websocket.Conn {
		cfg, err := websocket.NewConfig("ws"+strings.TrimPrefix(d.url, "http")+"/v1/processes/"+id+"/terminal/ws", d.url)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Header.Set("Authorization", "Bearer "+aliceTok)
		ws, err := websocket.DialConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}
	ws := dial()
	defer ws.Close()
	for _, f := range []string{`{"type":"resize","cols":-5,"rows":-1}`, `{"type":"resize","cols":0,"rows":0}`,
		`{"type":"resize","cols":70000,"rows":65537}`, `{"type":"resize","cols":1099511627776,"rows":3}`,
		`{"type":"resize","cols":1e300,"rows":"x"}`, `{"type":"input","data":"%%%","encoding":"base64"}`,
		`{"type":"input","data":"x","encoding":"rot13"}`, `{"type":"nope"}`, `not json`, `{"type":"input"}`} {
		if err := websocket.Message.Send(ws, f); err != nil {
			t.Fatalf("send %s: %v", f, err)
		}
	}
	if err := websocket.Message.Send(ws, `{"type":"input","data":"stty size; echo alive-$((6*7))\n"}`); err != nil {
		t.Fatal(err)
	}
	var screen strings.Builder
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for !strings.Contains(screen.String(), "alive-42") {
		var msg []byte
		if err := websocket.Message.Receive(ws, &msg); err != nil {
			t.Fatalf("terminal: %v; screen %q", err, screen.String())
		}
		screen.Write(msg)
	}
	sized := false
	for _, l := range strings.Split(screen.String(), "\n") {
		f := strings.Fields(l) // "# ROWS COLS" after the prompt
		var rows, cols int
		if len(f) < 2 || f[0] == "stty" {
			continue
		}
		if n, _ := fmt.Sscanf(f[len(f)-2]+" "+f[len(f)-1], "%d %d", &rows, &cols); n == 2 {
			sized = true
			if rows < 1 || cols < 1 || rows > 0xffff || cols > 0xffff {
				t.Errorf("terminal size %d×%d", rows, cols)
			}
		}
	}
	if !sized {
		t.Errorf("no size in %q", screen.String())
	}
	// A frame beyond the limit ends this session only.
	websocket.Message.Send(ws, strings.Repeat("x", 2<<20))
	ws.Close()
	st, _, body := d.call(t, "GET", "/v1/processes/"+id, aliceTok, "", nil)
	if st != 200 || !strings.Contains(body, `"status":"running"`) {
		t.Fatalf("the process after the frames: %d %s", st, body)
	}
	ws2 := dial()
	ws2.Close()
	d.healthy(t)
}
