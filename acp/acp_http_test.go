package acp

import (
	"errors"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// TestACPEndToEnd drives the official-SDK test agent through the proxy:
// lazy install and start, the SSE stream opened before the first POST,
// request/response, notifications, a request from the agent to the client
// answered by a POSTed response (202), and _sandboxagent/* passed through.
func TestACPEndToEnd(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	if r := e.do("GET", "/v1/acp", "", nil); r.status != 200 || string(r.body) != "{\"servers\":[]}\n" {
		t.Fatalf("empty list: %d %s", r.status, r.body)
	}
	if _, err := os.Stat(e.root + "/.agents/agent.mjs"); err == nil {
		t.Fatal("agent installed before the first POST")
	}
	// The SDK opens the stream concurrently with its first POST.
	type opened struct{ s *sseStream }
	ch := make(chan opened, 1)
	go func() { ch <- opened{e.openSSE("srv")} }()
	time.Sleep(50 * time.Millisecond)
	session := e.startSession("srv")
	sse := (<-ch).s
	if sse.resp.StatusCode != 200 || sse.resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("SSE: %d %s", sse.resp.StatusCode, sse.resp.Header.Get("Content-Type"))
	}
	first := sse.next(t, 10*time.Second)
	if first.event != "message" || first.id != 1 || mustJSON(t, first.data)["id"] != 1.0 {
		t.Fatalf("first event %+v", first)
	}
	if _, err := os.Stat(e.root + "/.agents/agent.mjs"); err != nil {
		t.Fatalf("lazy install did not run: %v", err)
	}

	// A prompt: three session/update notifications, then a request to the
	// client that blocks the turn until answered.
	done := make(chan response, 1)
	go func() { done <- e.rpc("srv", "", promptMsg(3, session, "hi")) }()
	evs := sse.until(t, "session/request_permission", 20*time.Second)
	updates := 0
	for _, ev := range evs {
		if strings.Contains(ev.data, `"session/update"`) {
			updates++
		}
	}
	if updates != 3 {
		t.Fatalf("%d session/update notifications before the permission request, want 3: %+v", updates, evs)
	}
	req := mustJSON(t, evs[len(evs)-1].data)
	reqID, _ := req["id"].(float64)
	answer := `{"jsonrpc":"2.0","id":` + strconv.Itoa(int(reqID)) +
		`,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`
	if r := e.rpc("srv", "", answer); r.status != 202 || len(r.body) != 0 {
		t.Fatalf("client response: %d %q", r.status, r.body)
	}
	r := <-done
	if r.status != 200 || r.json(t)["result"].(map[string]any)["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %d %s", r.status, r.body)
	}
	sse.until(t, "permission:selected:allow", 10*time.Second)

	// _sandboxagent/* is not special: forwarded, answered by the agent.
	r = e.rpc("srv", "", `{"jsonrpc":"2.0","id":"x-7","method":"_sandboxagent/session/list","params":{"keep":[1,2]}}`)
	if r.status != 200 || !strings.Contains(string(r.body), `"method":"_sandboxagent/session/list","params":{"keep":[1,2]}`) {
		t.Fatalf("_sandboxagent request: %d %s", r.status, r.body)
	}
	r = e.rpc("srv", "", `{"jsonrpc":"2.0","method":"_sandboxagent/session/set_metadata","params":{"k":"v"}}`)
	if r.status != 202 || len(r.body) != 0 {
		t.Fatalf("_sandboxagent notification: %d %s", r.status, r.body)
	}
	sse.until(t, `"_sandboxagent/session/set_metadata"`, 10*time.Second)

	// A notification with a pretty-printed body is framed as one line.
	r = e.rpc("srv", "", "{\n  \"jsonrpc\": \"2.0\",\n  \"method\": \"session/cancel\",\n  \"params\": {\"sessionId\": \""+session+"\"}\n}")
	if r.status != 202 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	list := e.do("GET", "/v1/acp", "", nil).json(t)["servers"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["status"] != "running" || list[0].(map[string]any)["agent"] != "test" {
		t.Fatalf("list: %v", list)
	}
	ag := e.do("GET", "/v1/agents/test", "", nil).json(t)
	if ag["installed"] != true || ag["serverStatus"].(map[string]any)["status"] != "running" {
		t.Fatalf("agent info: %v", ag)
	}
}

// TestACPErrors covers the ACP transport errors of docs/acp-proxy.md.
func TestACPErrors(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	e.startSession("s1")
	tests := []struct {
		name, id, query, ctype, body string
		status                       int
		kind                         string
	}{
		{"no agent on first POST", "new", "", "application/json", initMsg, 400, "invalid_request"},
		{"unknown agent", "new", "agent=nope", "application/json", initMsg, 400, "unsupported_agent"},
		{"agent mismatch", "s1", "agent=other", "application/json", initMsg, 409, "conflict"},
		{"bad content type", "s1", "", "text/plain", initMsg, 415, "unsupported_media_type"},
		{"no content type", "s1", "", "", initMsg, 415, "unsupported_media_type"},
		{"invalid JSON", "s1", "", "application/json", `{bad`, 400, "invalid_request"},
		{"array body", "s1", "", "application/json", `[1]`, 400, "invalid_request"},
		{"bad id type", "s1", "", "application/json", `{"jsonrpc":"2.0","id":{},"method":"x"}`, 400, "invalid_request"},
		{"server id too long", strings.Repeat("x", 129), "agent=test", "application/json", initMsg, 400, "invalid_request"},
		{"server id with control char", "a%01b", "agent=test", "application/json", initMsg, 400, "invalid_request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := "/v1/acp/" + tc.id
			if tc.query != "" {
				p += "?" + tc.query
			}
			r := e.do("POST", p, tc.ctype, []byte(tc.body))
			if r.status != tc.status || r.header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%d %s %s", r.status, r.header.Get("Content-Type"), r.body)
			}
			m := r.json(t)
			if m["type"] != "urn:sandbox-agent:error:"+tc.kind || m["status"] != float64(tc.status) {
				t.Fatalf("body %v", m)
			}
		})
	}
	if r := e.do("GET", "/v1/acp/missing", "", nil); r.status != 404 || r.json(t)["sessionId"] != "missing" {
		t.Fatalf("GET missing: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/acp/s1", "", nil, "Last-Event-ID", "abc"); r.status != 400 {
		t.Fatalf("bad Last-Event-ID: %d %s", r.status, r.body)
	}
	if e.h.Proxy().Get("new") != nil {
		t.Fatal("a failed bootstrap left an instance")
	}
}

// TestACPTimeoutAndDeadAgent: 504 on a silent agent, 502 on a dead one
// (and on every later POST), 502 when the launch command fails.
func TestACPTimeoutAndDeadAgent(t *testing.T) {
	bad := Agent{ID: "missing", Command: "exec ./no-such-agent-binary"}
	// The timeout also bounds the agent's answer to initialize, which a
	// loaded machine's Node start-up can take most of a second to give.
	e := newTestEnv(t, envOpts{proxy: ProxyConfig{RequestTimeout: 3 * time.Second}})
	reg := e.h.agents
	if err := reg.Set(bad); err != nil {
		t.Fatal(err)
	}
	session := e.startSession("s")
	start := time.Now()
	r := e.rpc("s", "", promptMsg(5, session, "silent"))
	if r.status != 504 || r.json(t)["type"] != "urn:sandbox-agent:error:timeout" {
		t.Fatalf("silent: %d %s", r.status, r.body)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("504 took %v", d)
	}
	r = e.rpc("s", "", promptMsg(6, session, "die"))
	if r.status != 502 || r.json(t)["type"] != "urn:sandbox-agent:error:stream_error" {
		t.Fatalf("die: %d %s", r.status, r.body)
	}
	if r := e.rpc("s", "", promptMsg(7, session, "hi")); r.status != 502 {
		t.Fatalf("after death: %d %s", r.status, r.body)
	}
	if r := e.rpc("s", "", `{"jsonrpc":"2.0","method":"n"}`); r.status != 502 {
		t.Fatalf("notification after death: %d %s", r.status, r.body)
	}
	list := e.do("GET", "/v1/acp", "", nil).json(t)["servers"].([]any)
	if st := list[0].(map[string]any)["status"]; st != "exited" {
		t.Fatalf("status %v", st)
	}
	if r := e.rpc("m", "agent=missing", initMsg); r.status != 502 {
		t.Fatalf("spawn failure: %d %s", r.status, r.body)
	}
}

// pidOf asks the test agent for its process id.
func pidOf(t *testing.T, e *testEnv, sse *sseStream, server, session string, id int) int {
	t.Helper()
	_, text := e.promptText(sse, server, session, id, "pid")
	pid, err := strconv.Atoi(text)
	if err != nil || pid <= 0 {
		t.Fatalf("pid %q", text)
	}
	return pid
}

func processGone(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// TestACPIsolationAndDelete: two server ids with the same agent have
// separate processes, sessions, pending requests and streams; DELETE is
// idempotent, kills the process and ends its stream.
func TestACPIsolationAndDelete(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	sa, sb := e.startSession("server-a"), e.startSession("server-b")
	if sa == sb {
		t.Fatalf("same session id %q on two servers", sa)
	}
	streamA, streamB := e.openSSE("server-a"), e.openSSE("server-b")
	pa := pidOf(t, e, streamA, "server-a", sa, 10)
	pb := pidOf(t, e, streamB, "server-b", sb, 10) // same JSON-RPC id on both: no clash
	if pa == pb {
		t.Fatal("one process for two server ids")
	}
	// Server a's stream holds nothing of server b's session.
	e.rpc("server-b", "", `{"jsonrpc":"2.0","id":11,"method":"_probe/b","params":{}}`)
	e.rpc("server-a", "", `{"jsonrpc":"2.0","id":11,"method":"_probe/a","params":{}}`)
	for _, ev := range streamA.until(t, "_probe/a", 10*time.Second) {
		if strings.Contains(ev.data, sb) || strings.Contains(ev.data, "_probe/b") {
			t.Fatalf("server-b message on server-a's stream: %s", ev.data)
		}
	}

	start := time.Now()
	if r := e.do("DELETE", "/v1/acp/server-a", "", nil); r.status != 204 {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	if d := time.Since(start); d > 6*time.Second {
		t.Fatalf("DELETE took %v", d)
	}
	if !processGone(pa, 5*time.Second) {
		t.Fatalf("agent process %d survived DELETE", pa)
	}
	for range streamA.events { // the stream ends
	}
	if r := e.do("DELETE", "/v1/acp/server-a", "", nil); r.status != 204 {
		t.Fatalf("second DELETE: %d", r.status)
	}
	if r := e.do("DELETE", "/v1/acp/never-existed", "", nil); r.status != 204 {
		t.Fatalf("DELETE unknown: %d", r.status)
	}
	if r := e.do("GET", "/v1/acp/server-a", "", nil); r.status != 404 {
		t.Fatalf("GET after DELETE: %d", r.status)
	}
	if r := e.rpc("server-a", "", initMsg); r.status != 400 {
		t.Fatalf("POST after DELETE without agent: %d", r.status)
	}
	// server-b is untouched.
	if got := pidOf(t, e, streamB, "server-b", sb, 12); got != pb {
		t.Fatalf("server-b pid changed %d -> %d", pb, got)
	}
	e.h.Close()
	if !processGone(pb, 5*time.Second) {
		t.Fatalf("agent process %d survived Close", pb)
	}
}

// TestACPReplay: Last-Event-ID replays what follows it, no header replays
// everything kept, and an evicted position is signalled with event: gap.
func TestACPReplay(t *testing.T) {
	e := newTestEnv(t, envOpts{proxy: ProxyConfig{ReplayEvents: 4}})
	e.startSession("r") // two responses: events 1 and 2
	for i := 0; i < 4; i++ {
		e.rpc("r", "", `{"jsonrpc":"2.0","id":`+strconv.Itoa(20+i)+`,"method":"_x/y","params":{}}`)
	}
	// Ring: events 3..6 kept.
	s := e.openSSE("r")
	ev := s.next(t, 5*time.Second)
	if ev.event != "message" || ev.id != 3 {
		t.Fatalf("full replay starts with %+v, want id 3", ev)
	}
	s = e.openSSE("r", "Last-Event-ID", "4")
	if ev := s.next(t, 5*time.Second); ev.id != 5 {
		t.Fatalf("replay after 4 starts with %+v", ev)
	}
	s = e.openSSE("r", "Last-Event-ID", "1")
	if ev := s.next(t, 5*time.Second); ev.event != "gap" || mustJSON(t, ev.data)["firstAvailableId"] != 3.0 {
		t.Fatalf("evicted position: %+v", ev)
	}
	if ev := s.next(t, 5*time.Second); ev.id != 3 {
		t.Fatalf("after gap: %+v", ev)
	}
	s = e.openSSE("r", "Last-Event-ID", "6")
	e.rpc("r", "", `{"jsonrpc":"2.0","id":30,"method":"_x/live","params":{}}`)
	if ev := s.next(t, 5*time.Second); ev.id != 7 || !strings.Contains(ev.data, `"id":30`) {
		t.Fatalf("live event %+v", ev)
	}
}

// TestACPEnvironment: the agent gets its declared host variable, never the
// daemon's token or any other daemon variable.
func TestACPEnvironment(t *testing.T) {
	t.Setenv("ACP_TEST_KEY", "k")
	t.Setenv("AGENTBE_AUTH_TOKEN", "secret-token")
	t.Setenv("DAEMON_ONLY_VARIABLE", "x")
	e := newTestEnv(t, envOpts{})
	session := e.startSession("env")
	_, names := e.promptText(e.openSSE("env"), "env", session, 3, "env")
	vars := map[string]bool{}
	for _, n := range strings.Split(names, ",") {
		vars[n] = true
	}
	if !vars["ACP_TEST_KEY"] || !vars["ACP_SDK"] || vars["AGENTBE_AUTH_TOKEN"] || vars["DAEMON_ONLY_VARIABLE"] {
		t.Fatalf("agent environment: %s", names)
	}
}

// TestACPConcurrentPosts: many requests in flight on one instance each get
// their own response.
func TestACPConcurrentPosts(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	e.startSession("c")
	var wg sync.WaitGroup
	errs := make(chan string, 32)
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := strconv.Itoa(100 + i)
			r := e.rpc("c", "", `{"jsonrpc":"2.0","id":`+id+`,"method":"_echo","params":{"n":`+id+`}}`)
			if r.status != 200 || !strings.Contains(string(r.body), `"id":`+id+`,`) || !strings.Contains(string(r.body), `"n":`+id) {
				errs <- string(r.body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for b := range errs {
		t.Errorf("mismatched response %s", b)
	}
}

// TestACPScopes: an instance started in one scope is invisible from
// another, and its process runs in the scope directory.
func TestACPScopes(t *testing.T) {
	e := newTestEnv(t, envOpts{agents: []Agent{{ID: "pwd", Command: `read line; echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"pwd\":\"$PWD\"}}"; sleep 30`}}})
	if err := e.local.Mkdir(t.Context(), "team/a"); err != nil {
		t.Fatal(err)
	}
	r := e.rpc("p", "agent=pwd", initMsg, "X-Scope-Path", "team/a")
	if r.status != 200 || !strings.HasSuffix(r.json(t)["result"].(map[string]any)["pwd"].(string), "/ws/team/a") {
		t.Fatalf("scoped start: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/acp/p", "", nil); r.status != 404 {
		t.Fatalf("instance visible outside its scope: %d", r.status)
	}
	if r := e.do("GET", "/v1/acp", "", nil); strings.Contains(string(r.body), `"p"`) {
		t.Fatalf("listed outside its scope: %s", r.body)
	}
	if r := e.do("GET", "/v1/acp", "", nil, "X-Scope-Path", "team/a"); !strings.Contains(string(r.body), `"serverId":"p"`) {
		t.Fatalf("not listed in its scope: %s", r.body)
	}
	// An agent's serverStatus counts only the request's scope.
	if r := e.do("GET", "/v1/agents/pwd", "", nil); strings.Contains(string(r.body), `"running"`) {
		t.Fatalf("another scope's instance counted: %s", r.body)
	}
	if r := e.do("GET", "/v1/agents", "", nil, "X-Scope-Path", "team/a"); !strings.Contains(string(r.body), `"status":"running"`) {
		t.Fatalf("own scope's instance not counted: %s", r.body)
	}
	// Another scope can neither write to it (even naming its agent) nor
	// delete it.
	note := `{"jsonrpc":"2.0","method":"_probe"}`
	if r := e.rpc("p", "agent=pwd", note); r.status != 409 {
		t.Fatalf("POST from another scope: %d %s", r.status, r.body)
	}
	if r := e.rpc("p", "", note); r.status != 400 {
		t.Fatalf("POST from another scope without agent: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", "/v1/acp/p", "", nil); r.status != 204 || e.h.Proxy().Get("p") == nil {
		t.Fatalf("DELETE from another scope: %d, instance gone: %v", r.status, e.h.Proxy().Get("p") == nil)
	}
}

// TestACPUnderDaemonIsolation starts an agent under the isolation the
// daemon uses by default (auto: bwrap where it works, else software): the
// process runs in the workspace, with the clean environment, and DELETE
// kills it.
func TestACPUnderDaemonIsolation(t *testing.T) {
	t.Setenv("AGENTBE_AUTH_TOKEN", "secret-token")
	t.Setenv("ACP_TEST_KEY", "k")
	shellAgent := `read line; echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"pwd\":\"$PWD\",\"key\":\"$ACP_TEST_KEY\",\"token\":\"$AGENTBE_AUTH_TOKEN\"}}"; exec sleep 300`
	e := newTestEnv(t, envOpts{isolation: agentbe.IsolationAuto,
		agents: []Agent{{ID: "sh", Command: shellAgent, HostEnv: []string{"ACP_TEST_KEY", "AGENTBE_AUTH_TOKEN"}}}})
	r := e.rpc("iso", "agent=sh", initMsg)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	res := r.json(t)["result"].(map[string]any)
	if res["key"] != "k" || res["token"] != "" || res["pwd"] == "" {
		t.Fatalf("agent saw %v", res)
	}
	if r := e.do("DELETE", "/v1/acp/iso", "", nil); r.status != 204 {
		t.Fatalf("DELETE %d", r.status)
	}
	if in := e.h.Proxy().Get("iso"); in != nil {
		t.Fatal("instance still listed")
	}
}

// TestACPStartFailure: an agent whose install fails answers 502 and is
// forgotten, so the same server ID can be bootstrapped again.
func TestACPStartFailure(t *testing.T) {
	e := newTestEnv(t, envOpts{agents: []Agent{testAgent(t, "test"),
		{ID: "noinstall", Command: "true", Install: "exit 3", Check: "never-there"}}})
	r := e.rpc("f", "agent=noinstall", initMsg)
	if r.status != 502 || !strings.Contains(string(r.body), "exit code 3") {
		t.Fatalf("%d %s", r.status, r.body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.h.Proxy().Get("f") != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if r := e.rpc("f", "agent=test", initMsg); r.status != 200 {
		t.Fatalf("retry after a failed start: %d %s", r.status, r.body)
	}
}

// TestACPNoLeaks: after a session with an open SSE stream and a pending
// request, closing the handler leaves no goroutine and no agent process.
func TestACPNoLeaks(t *testing.T) {
	http.DefaultClient.CloseIdleConnections()
	before := runtime.NumGoroutine()
	func() {
		e := newTestEnv(t, envOpts{})
		session := e.startSession("leak")
		sse := e.openSSE("leak")
		pid := pidOf(t, e, sse, "leak", session, 3)
		pending := make(chan response, 1)
		go func() { pending <- e.rpc("leak", "", promptMsg(4, session, "silent")) }()
		waitPending(t, e.h.Proxy().Get("leak"), 1)
		e.rpc("leak", "", `{"jsonrpc":"2.0","id":5,"method":"_probe","params":{}}`)
		sse.until(t, `"_probe"`, 10*time.Second)
		e.h.Close()
		if r := <-pending; r.status != 502 {
			t.Fatalf("pending request after Close: %d %s", r.status, r.body)
		}
		if !processGone(pid, 5*time.Second) {
			t.Fatalf("agent %d survived Close", pid)
		}
		sse.close()
		e.srv.Close()
	}()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestACPKeepAlive: an idle stream gets ": keepalive" comments, every 15 s
// by default (docs/acp-proxy.md, ACP transport).
func TestACPKeepAlive(t *testing.T) {
	if DefaultKeepAlive != 15*time.Second {
		t.Fatalf("DefaultKeepAlive %v, the spec says 15s", DefaultKeepAlive)
	}
	e := newTestEnv(t, envOpts{cfg: Config{KeepAlive: 50 * time.Millisecond}})
	e.startSession("k")
	s := e.openSSE("k")
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatal("stream ended")
			}
			if ev.event == "comment" && ev.data == ": keepalive" {
				return
			}
		case <-deadline:
			t.Fatal("no keepalive")
		}
	}
}

// waitPending waits until in has n requests waiting for their answer (the
// request goroutine reached the agent), so Close is sure to find them.
func waitPending(t *testing.T, in *Instance, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		in.mu.Lock()
		got := len(in.pending)
		in.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pending requests, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestACPBareCRInAgentLine: a bare CR inside an agent's line (JSON
// whitespace) does not split the SSE event: the message arrives compacted,
// as one data line that parses.
func TestACPBareCRInAgentLine(t *testing.T) {
	agent := `read line; echo '{"jsonrpc":"2.0","id":1,"result":{}}'; printf '{"jsonrpc":"2.0",\r"method":"cr/test","params":{}}\n'; sleep 30`
	e := newTestEnv(t, envOpts{agents: []Agent{{ID: "cr", Command: agent}}})
	if r := e.rpc("c", "agent=cr", initMsg); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	evs := e.openSSE("c").until(t, "cr/test", 10*time.Second)
	last := evs[len(evs)-1]
	if last.data != `{"jsonrpc":"2.0","method":"cr/test","params":{}}` {
		t.Fatalf("event data %q", last.data)
	}
}

// TestProxyListDelete: the proxy's own API (for embedders, without HTTP)
// lists every instance and deletes one, idempotently.
func TestProxyListDelete(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	e.startSession("a")
	e.startSession("b")
	p := e.h.Proxy()
	var ids []string
	for _, in := range p.List() {
		ids = append(ids, in.ServerID)
	}
	if len(ids) != 2 || ids[0] != "a" || ids[1] != "b" {
		t.Fatalf("List: %v", ids)
	}
	p.Delete("a")
	p.Delete("a")
	if p.Get("a") != nil || p.Get("b") == nil || len(p.List()) != 1 {
		t.Fatalf("after Delete: %v", p.List())
	}
}
