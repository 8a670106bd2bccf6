package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// interopDir is <repo>/interop, where the Node packages the tests drive are
// installed (npm ci --prefix interop). Missing tools fail the test: CI
// installs them, and this machine has them.
func interopDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "interop"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// acpSDK is the official ACP SDK entry point the test agent imports.
func acpSDK(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is required: %v", err)
	}
	p := filepath.Join(interopDir(t), "node_modules", "@agentclientprotocol", "sdk", "dist", "acp.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("@agentclientprotocol/sdk missing (npm ci --prefix interop): %v", err)
	}
	return p
}

// agentSource is the Node test agent's source file.
func agentSource(t testing.TB) string {
	return filepath.Join(interopDir(t), "testdata", "acp", "agent.mjs")
}

// testAgent is the Node test agent, installed from the workspace's src/
// by its install command (no network).
func testAgent(t testing.TB, id string) Agent {
	return Agent{ID: id, Command: "exec node .agents/agent.mjs",
		Install: "mkdir -p .agents && cp src/agent.mjs .agents/agent.mjs", Check: ".agents/agent.mjs",
		Env: map[string]string{"ACP_SDK": acpSDK(t)}, HostEnv: []string{"ACP_TEST_KEY", "AGENTBE_AUTH_TOKEN"}}
}

type testEnv struct {
	t     testing.TB
	root  string
	local *agentbe.Local
	h     *Handler
	srv   *httptest.Server
}

type envOpts struct {
	isolation agentbe.Isolation
	proxy     ProxyConfig
	cfg       Config
	agents    []Agent
}

// newTestEnv serves NewHandler over a Local workspace (with the test agent
// source in src/) on 127.0.0.1.
func newTestEnv(t testing.TB, o envOpts) *testEnv {
	t.Helper()
	root := filepath.Join(t.TempDir(), "ws")
	if o.isolation == "" {
		o.isolation = agentbe.IsolationNone
	}
	local, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: root, Isolation: o.isolation})
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(agentSource(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := local.Write(context.Background(), "src/agent.mjs", src); err != nil {
		t.Fatal(err)
	}
	if o.agents == nil {
		o.agents = []Agent{testAgent(t, "test")}
	}
	reg, err := NewRegistry(o.agents...)
	if err != nil {
		t.Fatal(err)
	}
	cfg := o.cfg
	if cfg.AttachWait == 0 {
		cfg.AttachWait = time.Second
	}
	cfg.Agents = reg
	cfg.Proxy = o.proxy
	if cfg.Proxy.SecretEnv == nil {
		cfg.Proxy.SecretEnv = []string{"AGENTBE_AUTH_TOKEN", "AUTH_TOKEN"}
	}
	cfg.Resolve = func(r *http.Request) (agentbe.Backend, func(), error) {
		if sp := r.Header.Get("X-Scope-Path"); sp != "" {
			s, err := local.Scope(sp, agentbe.ScopeOptions{})
			if err != nil {
				return nil, nil, err
			}
			return s, func() { s.Destroy(context.Background()) }, nil
		}
		return local, nil, nil
	}
	h, err := NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	e := &testEnv{t: t, root: root, local: local, h: h, srv: srv}
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		h.Close()
		local.Destroy(context.Background())
	})
	return e
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("status %d, body %q: %v", r.status, r.body, err)
	}
	return m
}

func (e *testEnv) do(method, path, ctype string, body []byte, hdr ...string) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

// rpc posts one JSON-RPC message to /v1/acp/{id}.
func (e *testEnv) rpc(id, query, msg string, hdr ...string) response {
	e.t.Helper()
	p := "/v1/acp/" + id
	if query != "" {
		p += "?" + query
	}
	return e.do("POST", p, "application/json", []byte(msg), hdr...)
}

// sseEvent is one parsed SSE event.
type sseEvent struct {
	event string
	id    uint64
	data  string
}

// sseStream reads an SSE response in the background.
type sseStream struct {
	resp   *http.Response
	events chan sseEvent
	cancel context.CancelFunc
}

func (e *testEnv) openSSE(id string, hdr ...string) *sseStream {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/v1/acp/"+id, nil)
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	s := &sseStream{resp: resp, events: make(chan sseEvent, 1024), cancel: cancel}
	e.t.Cleanup(s.close)
	go func() {
		defer close(s.events)
		scanSSE(resp.Body, func(ev sseEvent) bool { s.events <- ev; return true })
	}()
	return s
}

// scanSSE parses an SSE stream, calling emit with each event (with the
// data of its data: lines joined) and each comment line (as event
// "comment") until emit returns false or the stream ends.
func scanSSE(body io.Reader, emit func(sseEvent) bool) {
	r := bufio.NewReader(body)
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if (ev.event != "" || ev.data != "") && !emit(ev) {
				return
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			if !emit(sseEvent{event: "comment", data: line}) {
				return
			}
		case strings.HasPrefix(line, "event: "):
			ev.event = line[7:]
		case strings.HasPrefix(line, "id: "):
			ev.id, _ = strconv.ParseUint(line[4:], 10, 64)
		case strings.HasPrefix(line, "data: "):
			ev.data += line[6:]
		}
	}
}

func (s *sseStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// next returns the next event that is not a comment, failing after d.
func (s *sseStream) next(t testing.TB, d time.Duration) sseEvent {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatal("SSE stream ended")
			}
			if ev.event == "comment" {
				continue
			}
			return ev
		case <-timer.C:
			t.Fatalf("no SSE event within %v", d)
		}
	}
}

// until reads events until one's data contains want, returning all read.
func (s *sseStream) until(t testing.TB, want string, d time.Duration) []sseEvent {
	t.Helper()
	var got []sseEvent
	deadline := time.Now().Add(d)
	for {
		ev := s.next(t, time.Until(deadline))
		got = append(got, ev)
		if strings.Contains(ev.data, want) {
			return got
		}
	}
}

func mustJSON(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return m
}

const (
	initMsg    = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`
	newSession = `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`
)

func promptMsg(id int, session, text string) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"session/prompt","params":{"sessionId":"` +
		session + `","prompt":[{"type":"text","text":"` + text + `"}]}}`
}

// startSession bootstraps server id with the test agent and returns the
// ACP session id.
func (e *testEnv) startSession(id string) string {
	e.t.Helper()
	if r := e.rpc(id, "agent=test", initMsg); r.status != 200 {
		e.t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	r := e.rpc(id, "", newSession)
	if r.status != 200 {
		e.t.Fatalf("session/new: %d %s", r.status, r.body)
	}
	return r.json(e.t)["result"].(map[string]any)["sessionId"].(string)
}

// promptText sends a prompt and returns the concatenated text of the
// agent_message_chunk updates seen on sse until the response came back.
func (e *testEnv) promptText(sse *sseStream, server, session string, id int, text string) (response, string) {
	e.t.Helper()
	r := e.rpc(server, "", promptMsg(id, session, text))
	var out strings.Builder
	evs := sse.until(e.t, `"id":`+strconv.Itoa(id)+`,"result"`, 30*time.Second)
	for _, ev := range evs {
		m := mustJSON(e.t, ev.data)
		if m["method"] == "session/update" {
			u := m["params"].(map[string]any)["update"].(map[string]any)
			out.WriteString(u["content"].(map[string]any)["text"].(string))
		}
	}
	return r, out.String()
}
