package mcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func newTestHTTP(t *testing.T, opts HTTPOptions, extra ...testTool) *httptest.Server {
	t.Helper()
	h := NewHTTPHandler(func(r *http.Request) (*Server, func(), error) {
		if r.Header.Get("X-Scope-Path") == "../x" {
			return nil, nil, &HTTPError{Status: 400, Body: map[string]string{"error": "Invalid scope path", "message": "Scope path must not contain path traversal sequences"}}
		}
		return protoServer(extra...), nil, nil
	}, opts)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

type httpCase struct {
	name       string
	method     string
	header     map[string]string
	body       string
	wantStatus int
	wantCT     string
	wantBody   string // JSON compared structurally; "" = not checked (empty for 202)
	contains   string // alternative to wantBody
}

func doHTTP(t *testing.T, ts *httptest.Server, c httpCase) {
	t.Helper()
	method := c.method
	if method == "" {
		method = http.MethodPost
	}
	req, _ := http.NewRequest(method, ts.URL, strings.NewReader(c.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range c.header {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != c.wantStatus {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, c.wantStatus, body)
	}
	if c.wantCT != "" && resp.Header.Get("Content-Type") != c.wantCT {
		t.Fatalf("content type %q, want %q", resp.Header.Get("Content-Type"), c.wantCT)
	}
	switch {
	case c.contains != "":
		if !strings.Contains(string(body), c.contains) {
			t.Fatalf("body %s lacks %s", body, c.contains)
		}
	case c.wantBody == "":
		if c.wantStatus == http.StatusAccepted && len(body) != 0 {
			t.Fatalf("unexpected body %s", body)
		}
	default:
		jsonEqual(t, body, c.wantBody)
	}
}

func sdkErr(code int, msg string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
	return string(b)
}

func TestHTTPHandler(t *testing.T) {
	ts := newTestHTTP(t, HTTPOptions{MaxBodyBytes: 1024})
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	cases := []httpCase{
		{name: "ping json", body: ping, wantStatus: 200, wantCT: "application/json", wantBody: `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{name: "sse only", body: ping, header: map[string]string{"Accept": "text/event-stream"}, wantStatus: 200, wantCT: "text/event-stream",
			contains: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"},
		{name: "wildcard accept", body: ping, header: map[string]string{"Accept": "*/*"}, wantStatus: 200, wantCT: "application/json"},
		{name: "notification 202", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, wantStatus: 202},
		{name: "get 405", method: "GET", wantStatus: 405, wantBody: sdkErr(-32000, "Method not allowed.")},
		{name: "delete 405", method: "DELETE", wantStatus: 405, wantBody: sdkErr(-32000, "Method not allowed.")},
		{name: "no accept 406", body: ping, header: map[string]string{"Accept": ""}, wantStatus: 406,
			wantBody: sdkErr(-32000, "Not Acceptable: Client must accept both application/json and text/event-stream")},
		{name: "html accept 406", body: ping, header: map[string]string{"Accept": "text/html"}, wantStatus: 406,
			wantBody: sdkErr(-32000, "Not Acceptable: Client must accept both application/json and text/event-stream")},
		{name: "text/plain 415", body: ping, header: map[string]string{"Content-Type": "text/plain"}, wantStatus: 415,
			wantBody: sdkErr(-32000, "Unsupported Media Type: Content-Type must be application/json")},
		{name: "json charset ok", body: ping, header: map[string]string{"Content-Type": "application/json; charset=utf-8"}, wantStatus: 200},
		{name: "too large 413", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 2000) + `"}}`, wantStatus: 413,
			wantBody: sdkErr(-32000, "Payload Too Large: Request body must not exceed 1024 bytes")},
		{name: "parse error 400", body: `{"jsonrpc":`, wantStatus: 400, wantBody: sdkErr(-32700, "Parse error: Invalid JSON")},
		{name: "scalar 400", body: `42`, wantStatus: 400, wantBody: sdkErr(-32700, "Parse error: Invalid JSON-RPC message")},
		{name: "broken batch 400", body: `[{"jsonrpc":"2.0"`, wantStatus: 400, wantBody: sdkErr(-32700, "Parse error: Invalid JSON")},
		{name: "batch of scalars 400", body: `[1,2]`, wantStatus: 400, wantBody: sdkErr(-32700, "Parse error: Invalid JSON-RPC message")},
		{name: "empty batch 202", body: `[]`, wantStatus: 202},
		{name: "invalid message 400", body: `{"jsonrpc":"2.0","id":1}`, wantStatus: 400, wantBody: sdkErr(-32700, "Parse error: Invalid JSON-RPC message")},
		{name: "batch", body: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":"b","method":"nope"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
			wantStatus: 200, wantBody: `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":"b","error":{"code":-32601,"message":"Method not found"}}]`},
		{name: "batch one request", body: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
			wantStatus: 200, wantBody: `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{name: "batch init plus more", body: `[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
			wantStatus: 400, wantBody: sdkErr(-32600, "Invalid Request: Only one initialization request is allowed")},
		{name: "batch too big", body: "[" + strings.TrimSuffix(strings.Repeat(`{"jsonrpc":"2.0","method":"n"},`, 101), ",") + "]", wantStatus: 413},
		{name: "bad protocol header", body: ping, header: map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, wantStatus: 400,
			contains: "Bad Request: Unsupported protocol version: 1999-01-01"},
		{name: "factory error", body: ping, header: map[string]string{"X-Scope-Path": "../x"}, wantStatus: 400,
			wantBody: `{"error":"Invalid scope path","message":"Scope path must not contain path traversal sequences"}`},
		{name: "evil host", body: ping, header: map[string]string{"Host": "evil.example.com"}, wantStatus: 403,
			wantBody: sdkErr(-32000, "Invalid Host header: evil.example.com")},
		{name: "evil origin", body: ping, header: map[string]string{"Origin": "http://evil.example.com"}, wantStatus: 403,
			wantBody: sdkErr(-32000, "Invalid Origin header: http://evil.example.com")},
		{name: "localhost host", body: ping, header: map[string]string{"Host": "localhost:1234", "Origin": "http://127.0.0.1:99"}, wantStatus: 200},
		{name: "ipv6 loopback host", body: ping, header: map[string]string{"Host": "[::1]:1234"}, wantStatus: 200},
		{name: "tool panic is result", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"panic"}}`, wantStatus: 200,
			wantBody: `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Internal error: tool panic panicked"}],"isError":true}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { doHTTP(t, ts, c) })
	}
}

func TestHTTPBatchLimit(t *testing.T) {
	ts := newTestHTTP(t, HTTPOptions{})
	body := "[" + strings.TrimSuffix(strings.Repeat(`{"jsonrpc":"2.0","method":"n"},`, 101), ",") + "]"
	doHTTP(t, ts, httpCase{body: body, wantStatus: 400, wantBody: sdkErr(-32600, "Invalid Request: Batch must not exceed 100 messages")})
}

func TestHTTPAllowedHosts(t *testing.T) {
	ts := newTestHTTP(t, HTTPOptions{AllowedHosts: []string{"agentbe.internal"}})
	doHTTP(t, ts, httpCase{body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, header: map[string]string{"Host": "agentbe.internal:80"}, wantStatus: 200})
}

// TestHTTPDisableHostCheck: with the check left to a wrapping handler, a
// foreign Host and Origin on a loopback listener reach the server.
func TestHTTPDisableHostCheck(t *testing.T) {
	ts := newTestHTTP(t, HTTPOptions{DisableHostCheck: true})
	doHTTP(t, ts, httpCase{body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		header: map[string]string{"Host": "evil.example.com", "Origin": "http://evil.example.com"}, wantStatus: 200})
}

// TestHTTPCancelAcrossRequests cancels a running tools/call with a
// notifications/cancelled sent in a second POST, as the SDK client does.
func TestHTTPCancelAcrossRequests(t *testing.T) {
	var cancelled atomic.Int32
	started := make(chan struct{}, 1)
	ts := newTestHTTP(t, HTTPOptions{}, testTool{Tool{Name: "slow"}, func(ctx context.Context, _ json.RawMessage) (*CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			cancelled.Add(1)
			return nil, ctx.Err()
		case <-time.After(30 * time.Second):
			return TextResult("done"), nil
		}
	}})
	post := func(body, auth string) *http.Response {
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return nil
		}
		return resp
	}
	done := make(chan int)
	go func() {
		resp := post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow"}}`, "Bearer a")
		if resp == nil {
			done <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	<-started
	// Another client (other Authorization) cannot cancel it.
	resp := post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`, "Bearer b")
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("cancel status %d", resp.StatusCode)
	}
	time.Sleep(50 * time.Millisecond)
	if cancelled.Load() != 0 {
		t.Fatal("a different client cancelled the call")
	}
	resp = post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`, "Bearer a")
	resp.Body.Close()
	select {
	case st := <-done:
		if st != 202 {
			t.Fatalf("cancelled call answered with %d", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("call not cancelled")
	}
	if cancelled.Load() != 1 {
		t.Fatalf("cancelled = %d", cancelled.Load())
	}
}

// TestHTTPClientDisconnectCancels checks that a dropped connection cancels
// the tool's context.
func TestHTTPClientDisconnectCancels(t *testing.T) {
	gotCancel := make(chan struct{})
	started := make(chan struct{})
	ts := newTestHTTP(t, HTTPOptions{}, testTool{Tool{Name: "slow"}, func(ctx context.Context, _ json.RawMessage) (*CallToolResult, error) {
		close(started)
		<-ctx.Done()
		close(gotCancel)
		return nil, ctx.Err()
	}})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	go func() { <-started; cancel() }()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	select {
	case <-gotCancel:
	case <-time.After(10 * time.Second):
		t.Fatal("tool not cancelled on disconnect")
	}
}

func TestParseAccept(t *testing.T) {
	cases := []struct {
		in        string
		json, sse bool
	}{
		{"application/json, text/event-stream", true, true},
		{"text/event-stream", false, true},
		{"application/json;q=0, text/event-stream", false, true},
		{"application/json; q=0.5", true, false},
		{"*/*", true, true},
		{"text/*;q=0.1", false, true},
		{"text/html", false, false},
		{"", false, false},
	}
	for _, c := range cases {
		j, s := parseAccept([]string{c.in})
		if j != c.json || s != c.sse {
			t.Errorf("%q: json=%v sse=%v", c.in, j, s)
		}
	}
}

func TestHTTPFactoryFailures(t *testing.T) {
	released := 0
	for name, f := range map[string]ServerFactory{
		"nil server":  func(*http.Request) (*Server, func(), error) { return nil, nil, nil },
		"plain error": func(*http.Request) (*Server, func(), error) { return nil, nil, io.ErrUnexpectedEOF },
		"error with release": func(*http.Request) (*Server, func(), error) {
			return nil, func() { released++ }, io.ErrUnexpectedEOF
		},
	} {
		t.Run(name, func(t *testing.T) {
			ts := httptest.NewServer(NewHTTPHandler(f, HTTPOptions{}))
			defer ts.Close()
			doHTTP(t, ts, httpCase{body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, wantStatus: 500,
				wantBody: sdkErr(CodeInternalError, "Internal server error")})
		})
	}
	if released != 1 {
		t.Errorf("the release returned with an error ran %d times", released)
	}
}

// TestHTTPTransportOwnsCancellation: the HTTP transport cancels its calls
// from its own table (a cancellation arrives in another POST, to another
// Server), so the Server it made for the request keeps no table of its
// own; a Server used directly keeps one while the call runs.
func TestHTTPTransportOwnsCancellation(t *testing.T) {
	var srv *Server
	inflight := -1
	probe := testTool{Tool{Name: "probe"}, func(context.Context, json.RawMessage) (*CallToolResult, error) {
		srv.mu.Lock()
		inflight = len(srv.inflight)
		srv.mu.Unlock()
		return TextResult("ok"), nil
	}}
	h := NewHTTPHandler(func(*http.Request) (*Server, func(), error) {
		srv = protoServer(probe)
		return srv, nil, nil
	}, HTTPOptions{})
	ts := httptest.NewServer(h)
	defer ts.Close()
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"probe"}}`
	doHTTP(t, ts, httpCase{body: call, wantStatus: 200, contains: `"text":"ok"`})
	if inflight != 0 || srv.inflight != nil {
		t.Errorf("over HTTP the Server tracked the call itself (%d entries while it ran)", inflight)
	}
	srv = protoServer(probe)
	srv.HandleBytes(context.Background(), []byte(call))
	if inflight != 1 {
		t.Errorf("Handle: %d entries in the Server's table while the call ran, want 1", inflight)
	}
}
