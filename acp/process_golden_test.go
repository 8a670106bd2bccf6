package acp

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// procStep is one request of the /v1/processes differential test. In path
// and body, {id} is the id the server gave the process started by the
// step named ref.
type procStep struct {
	goldenCase
	ref    string // the step whose process id replaces {id}
	waitOf string // before the request: wait until that step's process exited
	poll   string // repeat the request (10 s at most) until the body holds this
}

// TestProcessesVsSandboxAgent drives the sandbox-agent 0.4.2 binary and
// our handler through the same /v1/processes requests and requires the
// same status, media type and JSON shape, except for the documented
// differences, whose answers are checked too.
func TestProcessesVsSandboxAgent(t *testing.T) {
	saURL, _ := startSandboxAgent(t)
	ours, _ := startTestServer(t, buildTestServer(t), "-agent", "mock=exec node src/agent.mjs")
	j := "application/json"
	fullCfg := `{"maxConcurrentProcesses":64,"defaultRunTimeoutMs":30000,"maxRunTimeoutMs":300000,"maxOutputBytes":1048576,"maxLogBytesPerProcess":10485760,"maxInputBytesPerRequest":65536}`
	steps := []procStep{
		{goldenCase: goldenCase{name: "config", method: "GET", path: "/v1/processes/config"}},
		{goldenCase: goldenCase{name: "config set", method: "POST", path: "/v1/processes/config", ctype: j, body: fullCfg}},
		{goldenCase: goldenCase{name: "config set partial", method: "POST", path: "/v1/processes/config", ctype: j, body: `{"maxConcurrentProcesses":2}`,
			diff: "problem+json 422 instead of text/plain 422", wantStatus: 422}},
		{goldenCase: goldenCase{name: "start", method: "POST", path: "/v1/processes", ctype: j,
			body: `{"command":"sh","args":["-c","echo hi; sleep 0.2; echo err >&2"]}`}},
		{goldenCase: goldenCase{name: "get exited", method: "GET", path: "/v1/processes/{id}"}, ref: "start", waitOf: "start"},
		{goldenCase: goldenCase{name: "logs", method: "GET", path: "/v1/processes/{id}/logs"}, ref: "start"},
		{goldenCase: goldenCase{name: "logs stderr", method: "GET", path: "/v1/processes/{id}/logs?stream=stderr"}, ref: "start"},
		{goldenCase: goldenCase{name: "logs since", method: "GET", path: "/v1/processes/{id}/logs?since=1"}, ref: "start"},
		{goldenCase: goldenCase{name: "logs tail", method: "GET", path: "/v1/processes/{id}/logs?tail=1"}, ref: "start"},
		{goldenCase: goldenCase{name: "logs pty empty", method: "GET", path: "/v1/processes/{id}/logs?stream=pty"}, ref: "start"},
		{goldenCase: goldenCase{name: "logs bad stream", method: "GET", path: "/v1/processes/{id}/logs?stream=bad",
			diff: "problem+json 400 instead of text/plain 400", wantStatus: 400}, ref: "start"},
		{goldenCase: goldenCase{name: "list", method: "GET", path: "/v1/processes"}},
		{goldenCase: goldenCase{name: "start cat", method: "POST", path: "/v1/processes", ctype: j, body: `{"command":"cat","interactive":true}`}},
		{goldenCase: goldenCase{name: "input base64", method: "POST", path: "/v1/processes/{id}/input", ctype: j, body: `{"data":"aGVsbG8K"}`}, ref: "start cat"},
		{goldenCase: goldenCase{name: "input utf8", method: "POST", path: "/v1/processes/{id}/input", ctype: j, body: `{"data":"hi\n","encoding":"utf8"}`}, ref: "start cat"},
		{goldenCase: goldenCase{name: "input bad base64", method: "POST", path: "/v1/processes/{id}/input", ctype: j, body: `{"data":"hello"}`}, ref: "start cat"},
		{goldenCase: goldenCase{name: "input bad encoding", method: "POST", path: "/v1/processes/{id}/input", ctype: j, body: `{"data":"x","encoding":"utf-8"}`}, ref: "start cat"},
		{goldenCase: goldenCase{name: "resize pipe", method: "POST", path: "/v1/processes/{id}/terminal/resize", ctype: j, body: `{"cols":10,"rows":5}`}, ref: "start cat"},
		{goldenCase: goldenCase{name: "delete running", method: "DELETE", path: "/v1/processes/{id}"}, ref: "start cat"},
		{goldenCase: goldenCase{name: "stop", method: "POST", path: "/v1/processes/{id}/stop?waitMs=3000"}, ref: "start cat"},
		{goldenCase: goldenCase{name: "kill exited", method: "POST", path: "/v1/processes/{id}/kill"}, ref: "start cat"},
		{goldenCase: goldenCase{name: "delete", method: "DELETE", path: "/v1/processes/{id}"}, ref: "start cat"},
		{goldenCase: goldenCase{name: "get deleted", method: "GET", path: "/v1/processes/{id}"}, ref: "start cat"},
		{goldenCase: goldenCase{name: "kill deleted", method: "POST", path: "/v1/processes/{id}/kill"}, ref: "start cat"},
		{goldenCase: goldenCase{name: "start sleep", method: "POST", path: "/v1/processes", ctype: j, body: `{"command":"sleep","args":["30"]}`}},
		{goldenCase: goldenCase{name: "kill", method: "POST", path: "/v1/processes/{id}/kill?waitMs=3000"}, ref: "start sleep"},
		{goldenCase: goldenCase{name: "start tty", method: "POST", path: "/v1/processes", ctype: j, body: `{"command":"sh","tty":true,"interactive":true}`}},
		{goldenCase: goldenCase{name: "resize tty", method: "POST", path: "/v1/processes/{id}/terminal/resize", ctype: j, body: `{"cols":100,"rows":40}`}, ref: "start tty"},
		{goldenCase: goldenCase{name: "logs tty", method: "GET", path: "/v1/processes/{id}/logs?stream=pty"}, ref: "start tty", poll: `"sequence"`},
		{goldenCase: goldenCase{name: "kill tty", method: "POST", path: "/v1/processes/{id}/kill?waitMs=3000"}, ref: "start tty"},
		{goldenCase: goldenCase{name: "run", method: "POST", path: "/v1/processes/run", ctype: j, body: `{"command":"sh","args":["-c","echo hi"]}`}},
		{goldenCase: goldenCase{name: "run exit 3", method: "POST", path: "/v1/processes/run", ctype: j, body: `{"command":"sh","args":["-c","echo e >&2; exit 3"]}`}},
		{goldenCase: goldenCase{name: "run timeout", method: "POST", path: "/v1/processes/run", ctype: j, body: `{"command":"sleep","args":["5"],"timeoutMs":300}`}},
		{goldenCase: goldenCase{name: "run truncated", method: "POST", path: "/v1/processes/run", ctype: j,
			body: `{"command":"sh","args":["-c","head -c 500 /dev/zero"],"maxOutputBytes":100}`}},
		{goldenCase: goldenCase{name: "run empty", method: "POST", path: "/v1/processes/run", ctype: j, body: `{"command":""}`}},
		{goldenCase: goldenCase{name: "start empty", method: "POST", path: "/v1/processes", ctype: j, body: `{"command":""}`}},
		{goldenCase: goldenCase{name: "start no command", method: "POST", path: "/v1/processes", ctype: j, body: `{"args":["x"]}`,
			diff: "problem+json 422 instead of text/plain 422", wantStatus: 422}},
		{goldenCase: goldenCase{name: "start missing program", method: "POST", path: "/v1/processes", ctype: j, body: `{"command":"no-such-program-w23"}`,
			diff: "the command runs through the workspace's shell and sandbox (as exec does), so a missing program starts and exits 127 instead of 502 stream_error", wantStatus: 200}},
		{goldenCase: goldenCase{name: "start outside cwd", method: "POST", path: "/v1/processes", ctype: j, body: `{"command":"pwd","cwd":"../.."}`,
			diff: "ESCAPE in sandbox-agent: cwd may name any host directory; a cwd outside the workspace is 403 path_escape here", wantStatus: 403}},
		{goldenCase: goldenCase{name: "get unknown", method: "GET", path: "/v1/processes/proc_999"}},
		{goldenCase: goldenCase{name: "logs unknown", method: "GET", path: "/v1/processes/proc_999/logs"}},
	}
	ids := map[string]map[string]string{saURL: {}, ours: {}}
	for _, s := range steps {
		var answers [2]goldenAnswer
		for i, base := range []string{saURL, ours} {
			c := s.goldenCase
			if s.waitOf != "" {
				waitGolden(t, base, ids[base][s.waitOf])
			}
			c.path = strings.ReplaceAll(c.path, "{id}", ids[base][s.ref])
			answers[i] = ask(t, base, c)
			for deadline := time.Now().Add(10 * time.Second); s.poll != "" && !strings.Contains(string(answers[i].body), s.poll) &&
				time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				answers[i] = ask(t, base, c)
			}
			var m map[string]any
			if json.Unmarshal(answers[i].body, &m) == nil && c.method == "POST" && c.path == "/v1/processes" {
				if id, ok := m["id"].(string); ok {
					ids[base][s.name] = id
				}
			}
		}
		theirs, mine := answers[0], answers[1]
		if s.diff != "" {
			if mine.status != s.wantStatus {
				t.Errorf("%s: ours %d, want %d (%s): %s", s.name, mine.status, s.wantStatus, s.diff, mine.body)
			}
			if mine.status >= 400 && mine.ctype != "application/problem+json" {
				t.Errorf("%s: ours %s, want problem+json", s.name, mine.ctype)
			}
			t.Logf("difference %-24s theirs %d %s | ours %d: %s", s.name, theirs.status, theirs.ctype, mine.status, s.diff)
			continue
		}
		if theirs.status != mine.status || theirs.ctype != mine.ctype || theirs.shape() != mine.shape() {
			t.Errorf("%s:\n theirs %d %s %s\n ours   %d %s %s\n theirs body %.300s\n ours body   %.300s", s.name,
				theirs.status, theirs.ctype, theirs.shape(), mine.status, mine.ctype, mine.shape(), theirs.body, mine.body)
		}
	}
	// follow=true: both answer an event stream whose events are "log"
	// with the sequence as id, replaying from the start.
	for _, base := range []string{saURL, ours} {
		evs := firstSSE(t, base+"/v1/processes/"+ids[base]["start"]+"/logs?follow=true", 2)
		if len(evs) != 2 || evs[0].event != "log" || evs[0].id != 1 || evs[1].id != 2 {
			t.Errorf("%s follow: %+v", base, evs)
		}
	}
}

// waitGolden waits until the process id on base has exited.
func waitGolden(t *testing.T, base, id string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(base + "/v1/processes/" + id)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if m["status"] == "exited" {
			return
		}
	}
	t.Fatalf("%s %s did not exit", base, id)
}
