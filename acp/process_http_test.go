package acp

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/agentbe/agent-backend/internal/testenv"
)

func (e *testEnv) startProc(body string, hdr ...string) map[string]any {
	e.t.Helper()
	r := e.do("POST", "/v1/processes", "application/json", []byte(body), hdr...)
	if r.status != 200 {
		e.t.Fatalf("start %s: %d %s", body, r.status, r.body)
	}
	return r.json(e.t)
}

// waitExited polls GET /v1/processes/{id} until the process has exited.
func (e *testEnv) waitExited(id string, hdr ...string) map[string]any {
	e.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		m := e.do("GET", "/v1/processes/"+id, "", nil, hdr...).json(e.t)
		if m["status"] == "exited" {
			return m
		}
	}
	e.t.Fatalf("%s did not exit", id)
	return nil
}

func logData(t *testing.T, m map[string]any) (string, []float64) {
	t.Helper()
	var out strings.Builder
	var seqs []float64
	for _, x := range m["entries"].([]any) {
		en := x.(map[string]any)
		b, err := base64.StdEncoding.DecodeString(en["data"].(string))
		if err != nil || en["encoding"] != "base64" {
			t.Fatalf("entry %v", en)
		}
		out.Write(b)
		seqs = append(seqs, en["sequence"].(float64))
	}
	return out.String(), seqs
}

func TestProcessRoutes(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	e.do("POST", "/v1/fs/mkdir?path=sub", "", nil)
	p := e.startProc(`{"command":"sh","args":["-c","echo hi; sleep 0.1; echo err >&2; pwd; echo $A; exit 3"],"cwd":"sub","env":{"A":"va"}}`)
	if p["id"] != "proc_1" || p["status"] != "running" || p["owner"] != "user" || p["cwd"] != "sub" || p["pid"] == nil {
		t.Errorf("start = %v", p)
	}
	x := e.waitExited("proc_1")
	if x["exitCode"] != 3.0 || x["pid"] != nil || x["exitedAtMs"] == nil {
		t.Errorf("exited = %v", x)
	}
	logs := e.do("GET", "/v1/processes/proc_1/logs", "", nil).json(t)
	out, seqs := logData(t, logs)
	if logs["stream"] != "combined" || logs["processId"] != "proc_1" ||
		!strings.HasPrefix(out, "hi\n") || !strings.Contains(out, "err\n") || !strings.Contains(out, "/sub\nva\n") || seqs[0] != 1 {
		t.Errorf("logs %v: %q", logs, out)
	}
	errs := e.do("GET", "/v1/processes/proc_1/logs?stream=stderr", "", nil).json(t)
	if out, _ := logData(t, errs); out != "err\n" || errs["stream"] != "stderr" {
		t.Errorf("stderr = %q", out)
	}
	since := e.do("GET", "/v1/processes/proc_1/logs?since=1&tail=1", "", nil).json(t)
	if _, s := logData(t, since); len(s) != 1 || s[0] != seqs[len(seqs)-1] {
		t.Errorf("since/tail = %v", s)
	}
	list := e.do("GET", "/v1/processes", "", nil).json(t)
	if ps := list["processes"].([]any); len(ps) != 1 {
		t.Errorf("list = %v", list)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/processes/proc_9", ""},
		{"GET", "/v1/processes/proc_9/logs", ""},
		{"POST", "/v1/processes/proc_9/stop", ""},
	} {
		r := e.do(c.method, c.path, "application/json", []byte(c.body))
		if m := r.json(t); r.status != 404 || m["type"] != "urn:sandbox-agent:error:not_found" {
			t.Errorf("%s %s = %d %s", c.method, c.path, r.status, r.body)
		}
	}
	if r := e.do("POST", "/v1/processes", "application/json", []byte(`{"command":"rm","args":["-rf","/"]}`)); r.status != 403 {
		t.Errorf("dangerous = %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", "/v1/processes/proc_1", "", nil); r.status != 204 {
		t.Errorf("delete = %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/processes/proc_1", "", nil); r.status != 404 {
		t.Errorf("get deleted = %d", r.status)
	}
}

func TestProcessInputStopKill(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	e.startProc(`{"command":"cat","interactive":true}`)
	for _, c := range []struct {
		body   string
		status int
	}{
		{`{"data":"aGVsbG8K"}`, 200},
		{`{"data":"text\n","encoding":"utf8"}`, 200},
		{`{"data":"hello"}`, 400},
		{`{"data":"x","encoding":"utf-8"}`, 400},
	} {
		if r := e.do("POST", "/v1/processes/proc_1/input", "application/json", []byte(c.body)); r.status != c.status {
			t.Errorf("input %s = %d %s", c.body, r.status, r.body)
		}
	}
	if r := e.do("POST", "/v1/processes/proc_1/terminal/resize", "application/json", []byte(`{"cols":10,"rows":5}`)); r.status != 409 {
		t.Errorf("resize pipe = %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", "/v1/processes/proc_1", "", nil); r.status != 409 {
		t.Errorf("delete running = %d", r.status)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		out, _ := logData(t, e.do("GET", "/v1/processes/proc_1/logs", "", nil).json(t))
		if out == "hello\ntext\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("logs %q", out)
		}
	}
	m := e.do("POST", "/v1/processes/proc_1/stop?waitMs=5000", "", nil).json(t)
	if m["status"] != "exited" || m["exitCode"] != nil {
		t.Errorf("stop = %v", m)
	}
	if r := e.do("POST", "/v1/processes/proc_1/kill", "", nil); r.status != 200 {
		t.Errorf("kill exited = %d", r.status)
	}
	e.startProc(`{"command":"sleep","args":["30"]}`)
	if m := e.do("POST", "/v1/processes/proc_2/kill?waitMs=5000", "", nil).json(t); m["status"] != "exited" {
		t.Errorf("kill = %v", m)
	}
}

func TestProcessRun(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	for _, c := range []struct {
		body, want string
	}{
		{`{"command":"sh","args":["-c","echo hi"]}`, `"exitCode":0,"stderr":"","stderrTruncated":false,"stdout":"hi\n","stdoutTruncated":false,"timedOut":false`},
		{`{"command":"sh","args":["-c","echo err >&2; exit 3"]}`, `"exitCode":3,"stderr":"err\n","stderrTruncated":false,"stdout":"","stdoutTruncated":false,"timedOut":false`},
		{`{"command":"sleep","args":["5"],"timeoutMs":300}`, `"exitCode":null,"stderr":"","stderrTruncated":false,"stdout":"","stdoutTruncated":false,"timedOut":true`},
		{`{"command":"sh","args":["-c","head -c 500 /dev/zero | tr '\\0' a"],"maxOutputBytes":100}`,
			`"exitCode":0,"stderr":"","stderrTruncated":false,"stdout":"` + strings.Repeat("a", 100) + `","stdoutTruncated":true,"timedOut":false`},
	} {
		r := e.do("POST", "/v1/processes/run", "application/json", []byte(c.body))
		m := r.json(t)
		if _, ok := m["durationMs"].(float64); !ok {
			t.Errorf("%s: no durationMs: %s", c.body, r.body)
		}
		delete(m, "durationMs")
		got, _ := json.Marshal(m)
		if string(got) != "{"+c.want+"}" {
			t.Errorf("%s:\n got %s\nwant {%s}", c.body, got, c.want)
		}
	}
	if r := e.do("POST", "/v1/processes/run", "application/json", []byte(`{"command":""}`)); r.status != 400 {
		t.Errorf("empty = %d", r.status)
	}
}

func TestProcessConfigRoute(t *testing.T) {
	e := newTestEnv(t, envOpts{cfg: Config{Processes: ProcessConfig{Limits: ProcessLimits{MaxConcurrentProcesses: 3}}}})
	m := e.do("GET", "/v1/processes/config", "", nil).json(t)
	if m["maxConcurrentProcesses"] != 3.0 || m["maxLogBytesPerProcess"] != float64(1<<20) {
		t.Errorf("config = %v", m)
	}
	body := `{"maxConcurrentProcesses":100,"defaultRunTimeoutMs":30000,"maxRunTimeoutMs":300000,"maxOutputBytes":1048576,"maxLogBytesPerProcess":10485760,"maxInputBytesPerRequest":65536}`
	if m := e.do("POST", "/v1/processes/config", "application/json", []byte(body)).json(t); m["maxConcurrentProcesses"] != 3.0 || m["maxLogBytesPerProcess"] != float64(1<<20) {
		t.Errorf("raised above the daemon's limit: %v", m)
	}
	body = strings.Replace(body, `"maxConcurrentProcesses":100`, `"maxConcurrentProcesses":1`, 1)
	if m := e.do("POST", "/v1/processes/config", "application/json", []byte(body)).json(t); m["maxConcurrentProcesses"] != 1.0 {
		t.Errorf("lowered: %v", m)
	}
	e.startProc(`{"command":"sleep","args":["30"]}`)
	r := e.do("POST", "/v1/processes", "application/json", []byte(`{"command":"sleep","args":["30"]}`))
	if m := r.json(t); r.status != 409 || m["type"] != "urn:sandbox-agent:error:conflict" {
		t.Errorf("over the cap: %d %s", r.status, r.body)
	}
	// Another scope has limits of its own.
	e.startProc(`{"command":"true"}`, "X-Scope-Path", "other")
}

// TestProcessScopeIsolation: a scope's processes are invisible to, and
// untouchable by, another scope (and the unscoped workspace).
func TestProcessScopeIsolation(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	a := e.startProc(`{"command":"cat"}`, "X-Scope-Path", "a")
	id := a["id"].(string)
	for _, hdr := range [][]string{{"X-Scope-Path", "b"}, nil} {
		if ps := e.do("GET", "/v1/processes", "", nil, hdr...).json(t)["processes"].([]any); len(ps) != 0 {
			t.Errorf("%v lists %v", hdr, ps)
		}
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/v1/processes/" + id, ""},
			{"GET", "/v1/processes/" + id + "/logs", ""},
			{"POST", "/v1/processes/" + id + "/input", `{"data":"eAo="}`},
			{"POST", "/v1/processes/" + id + "/kill", ""},
			{"POST", "/v1/processes/" + id + "/stop", ""},
			{"DELETE", "/v1/processes/" + id, ""},
			{"POST", "/v1/processes/" + id + "/terminal/resize", `{"cols":1,"rows":1}`},
		} {
			if r := e.do(c.method, c.path, "application/json", []byte(c.body), hdr...); r.status != 404 {
				t.Errorf("%v %s %s = %d", hdr, c.method, c.path, r.status)
			}
		}
	}
	if m := e.do("GET", "/v1/processes/"+id, "", nil, "X-Scope-Path", "a").json(t); m["status"] != "running" {
		t.Errorf("a's process = %v", m)
	}
	e.do("POST", "/v1/processes/"+id+"/kill", "", nil, "X-Scope-Path", "a")
}

// TestProcessLogsFollowReattach: a follower whose connection drops
// mid-stream reconnects with since = the last id it saw and misses
// nothing.
func TestProcessLogsFollowReattach(t *testing.T) {
	e := newTestEnv(t, envOpts{cfg: Config{KeepAlive: 50 * time.Millisecond}})
	e.startProc(`{"command":"cat"}`)
	input := func(s string) {
		e.do("POST", "/v1/processes/proc_1/input", "application/json",
			[]byte(`{"data":"`+s+`\n","encoding":"text"}`))
	}
	var got strings.Builder
	var last uint64
	read := func(until string) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET",
			e.srv.URL+"/v1/processes/proc_1/logs?follow=true&since="+strconv.FormatUint(last, 10), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("content type %q", ct)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var en logEntry
				json.Unmarshal([]byte(data), &en)
				if en.Sequence != last+1 {
					t.Errorf("sequence %d after %d", en.Sequence, last)
				}
				last = en.Sequence
				b, _ := base64.StdEncoding.DecodeString(en.Data)
				got.Write(b)
				if strings.HasSuffix(got.String(), until) {
					// Drop the connection abruptly, as a dying client does.
					resp.Body.Close()
					return
				}
			}
		}
		t.Fatalf("stream ended before %q: %v", until, sc.Err())
	}
	input("one")
	read("one\n")
	input("two") // while nobody follows
	input("three")
	read("three\n")
	if got.String() != "one\ntwo\nthree\n" {
		t.Errorf("read %q", got.String())
	}
	e.do("POST", "/v1/processes/proc_1/kill", "", nil)
}

// TestProcessLogsRingOverflow: with a small log limit, the oldest entries
// are dropped: the first sequence kept is above 1.
func TestProcessLogsRingOverflow(t *testing.T) {
	e := newTestEnv(t, envOpts{cfg: Config{Processes: ProcessConfig{Limits: ProcessLimits{MaxLogBytesPerProcess: 100}}}})
	e.startProc(`{"command":"sh","args":["-c","head -c 300000 /dev/zero; echo end"]}`)
	e.waitExited("proc_1")
	out, seqs := logData(t, e.do("GET", "/v1/processes/proc_1/logs", "", nil).json(t))
	if len(seqs) == 0 || seqs[0] == 1 || len(out) > 100 || !strings.HasSuffix(out, "end\n") {
		t.Errorf("kept %d bytes from sequence %v", len(out), seqs)
	}
}

// TestProcessTerminalWS: a PTY session through the terminal WebSocket
// runs tty, resizes (a frame and the resize route), and is interrupted by
// ^C while the shell survives.
func TestProcessTerminalWS(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	e.startProc(`{"command":"sh","args":["-i"],"tty":true,"interactive":true}`)
	if r := e.do("GET", "/v1/processes/proc_1/logs?stream=pty", "", nil); r.status != 200 {
		t.Fatalf("logs = %d", r.status)
	}
	ws, err := websocket.Dial(strings.Replace(e.srv.URL, "http", "ws", 1)+"/v1/processes/proc_1/terminal/ws", "", e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var ready terminalFrame
	var f wsFrame
	if err := frameCodec.Receive(ws, &f); err != nil || f.binary {
		t.Fatalf("first frame: %v %v", err, f)
	}
	json.Unmarshal(f.data, &ready)
	if ready.Type != "ready" || ready.ProcessID != "proc_1" {
		t.Fatalf("ready = %s", f.data)
	}
	var screen strings.Builder
	until := func(want string) {
		t.Helper()
		ws.SetReadDeadline(time.Now().Add(20 * time.Second))
		for !strings.Contains(screen.String(), want) {
			var f wsFrame
			if err := frameCodec.Receive(ws, &f); err != nil {
				t.Fatalf("waiting for %q: %v; screen %q", want, err, screen.String())
			}
			if f.binary {
				screen.WriteString(string(f.data))
			} else if !strings.Contains(want, `"type"`) {
				screen.WriteString(string(f.data))
			} else {
				screen.WriteString(string(f.data))
			}
		}
	}
	send := func(v any) {
		if err := frameCodec.Send(ws, v); err != nil {
			t.Fatal(err)
		}
	}
	text := func(s string) *string { return &s }
	send(terminalFrame{Type: "input", Data: text("tty\n")})
	until("/dev/pts/")
	send(terminalFrame{Type: "resize", Cols: 77, Rows: 33})
	send(terminalFrame{Type: "input", Data: text("stty size\n")})
	until("33 77")
	if r := e.do("POST", "/v1/processes/proc_1/terminal/resize", "application/json", []byte(`{"cols":91,"rows":19}`)); r.status != 200 {
		t.Fatalf("resize = %d %s", r.status, r.body)
	}
	send(terminalFrame{Type: "input", Data: text("stty size\n")})
	until("19 91")
	// The job says when it runs: it is the terminal's foreground by then.
	send(terminalFrame{Type: "input", Data: text("sh -c 'echo job-$((1+1)); exec sleep 50'; echo slept-$((1+1))\n")})
	until("job-2")
	send(terminalFrame{Type: "input", Data: text("\x03")})
	send(terminalFrame{Type: "input", Data: text("echo alive-$((40+2))\n")})
	until("alive-42")
	if strings.Contains(screen.String(), "slept-2") {
		t.Errorf("sleep not interrupted: %q", screen.String())
	}
	send(terminalFrame{Type: "input", Data: text("exit 4\n")})
	until(`{"type":"exit","exitCode":4}`)
	if m := e.waitExited("proc_1"); m["exitCode"] != 4.0 {
		t.Errorf("exit = %v", m)
	}
	// A pipe process has no terminal.
	e.startProc(`{"command":"cat"}`)
	if r := e.do("GET", "/v1/processes/proc_2/terminal/ws", "", nil); r.status != 409 {
		t.Errorf("pipe terminal = %d", r.status)
	}
	e.do("POST", "/v1/processes/proc_2/kill", "", nil)
}

// TestProcessDestroyLeavesNothing: destroying the workspace backend kills
// the daemon's processes.
func TestProcessDestroyLeavesNothing(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	marker := testenv.SleepMarker()
	e.startProc(`{"command":"sh","args":["-c","sleep ` + marker + ` & sleep ` + marker + `"]}`)
	e.startProc(`{"command":"sleep","args":["`+marker+`"],"tty":true}`, "X-Scope-Path", "s")
	for len(testenv.ProcessesWith(marker)) < 3 {
		time.Sleep(20 * time.Millisecond)
	}
	e.local.Destroy(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for len(testenv.ProcessesWith(marker)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := testenv.ProcessesWith(marker); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestProcessRoutesNoLeak: followed logs and terminal sessions that
// clients drop, and processes killed and deleted, leave no goroutine
// behind.
func TestProcessRoutesNoLeak(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	round := func() {
		p := e.startProc(`{"command":"sh","args":["-i"],"tty":true}`)
		id := p["id"].(string)
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/v1/processes/"+id+"/logs?follow=true", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := websocket.Dial(strings.Replace(e.srv.URL, "http", "ws", 1)+"/v1/processes/"+id+"/terminal/ws", "", e.srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		var f wsFrame
		frameCodec.Receive(ws, &f)
		ws.Close()
		cancel()
		resp.Body.Close()
		e.do("POST", "/v1/processes/"+id+"/kill?waitMs=5000", "", nil)
		if r := e.do("DELETE", "/v1/processes/"+id, "", nil); r.status != 204 {
			t.Fatalf("delete = %d %s", r.status, r.body)
		}
	}
	round()
	http.DefaultClient.CloseIdleConnections()
	e.srv.CloseClientConnections()
	before := settledGoroutines(0)
	for range 10 {
		round()
	}
	http.DefaultClient.CloseIdleConnections()
	e.srv.CloseClientConnections()
	if after := settledGoroutines(before); after > before {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines grew from %d to %d:\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}

// settledGoroutines polls until the goroutine count is at most limit (0:
// until it stops falling) and returns it.
func settledGoroutines(limit int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 300; i++ {
		time.Sleep(10 * time.Millisecond)
		m := runtime.NumGoroutine()
		if limit > 0 && m <= limit || limit == 0 && m == n && i > 20 {
			return m
		}
		n = m
	}
	return n
}
