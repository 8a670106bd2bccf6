package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

type pipeRWC struct {
	io.Reader
	io.Writer
	close func() error
}

func (p pipeRWC) Close() error { return p.close() }

// clientFactories builds one Client per transport, each connected to a
// Server made by newSrv.
func clientFactories(t *testing.T, newSrv func() *Server, opts ...ClientOptions) map[string]func() *Client {
	var o ClientOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	return map[string]func() *Client{
		"stream": func() *Client {
			cr, sw := io.Pipe() // server -> client
			sr, cw := io.Pipe() // client -> server
			done := make(chan struct{})
			go func() { ServeStdio(context.Background(), newSrv(), sr, sw); sw.Close(); close(done) }()
			return NewStreamClient(pipeRWC{cr, cw, func() error { cw.Close(); <-done; return nil }}, o)
		},
		"inprocess": func() *Client { return NewInProcessClient(newSrv(), o) },
		"http": func() *Client {
			ts := httptest.NewServer(NewHTTPHandler(func(*http.Request) (*Server, func(), error) { return newSrv(), nil, nil }, HTTPOptions{}))
			t.Cleanup(ts.Close)
			return NewHTTPClient(ts.URL, HTTPClientOptions{ClientOptions: o})
		},
		"http-sse": func() *Client {
			h := NewHTTPHandler(func(*http.Request) (*Server, func(), error) { return newSrv(), nil, nil }, HTTPOptions{})
			// Force SSE answers by narrowing the Accept header on the way in.
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.Header.Set("Accept", "text/event-stream")
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(ts.Close)
			return NewHTTPClient(ts.URL, HTTPClientOptions{ClientOptions: o})
		},
	}
}

// TestClientTransports drives every transport in both eras: the default
// Client negotiates the modern one, a Client asking for a 2025 version
// speaks the legacy one.
func TestClientTransports(t *testing.T) {
	for _, want := range []string{"", LatestLegacyProtocolVersion} {
		for name, mk := range clientFactories(t, func() *Server { return protoServer() }, ClientOptions{ProtocolVersion: want}) {
			t.Run(name+"/"+want, func(t *testing.T) { testClientTransport(t, mk, name, want) })
		}
	}
}

func testClientTransport(t *testing.T, mk func() *Client, name, want string) {
	base := runtime.NumGoroutine()
	c := mk()
	ctx := context.Background()
	init, err := c.Initialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantVersion := want
	if want == "" {
		wantVersion = ProtocolVersion2026
	}
	if init.ProtocolVersion != wantVersion || c.ProtocolVersion() != wantVersion || init.ServerInfo.Name != "agent-backend" || c.Initialized() == nil {
		t.Fatalf("initialize: %+v", init)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	tools, err := c.ListTools(ctx)
	if err != nil || len(tools) != 5 || tools[0].Name != "echo" {
		t.Fatalf("tools %+v %v", tools, err)
	}
	res, err := c.CallTool(ctx, "echo", map[string]string{"text": "héllo\n"})
	if err != nil || res.IsError || res.Content[0].Text != "héllo\n" {
		t.Fatalf("echo: %+v %v", res, err)
	}
	res, err = c.CallTool(ctx, "echo", json.RawMessage(`{"text":"raw"}`))
	if err != nil || res.Content[0].Text != "raw" {
		t.Fatalf("raw args: %+v %v", res, err)
	}
	res, err = c.CallTool(ctx, "nope", nil)
	var rpcErr *RPCError
	if want == "" {
		// The modern era makes an unknown tool a protocol error.
		if !errors.As(err, &rpcErr) || rpcErr.Code != CodeInvalidParams || rpcErr.Message != "Tool nope not found" {
			t.Fatalf("unknown tool: %+v %v", res, err)
		}
	} else if err != nil || !res.IsError || res.Content[0].Text != "MCP error -32602: Tool nope not found" {
		t.Fatalf("unknown tool: %+v %v", res, err)
	}
	res, err = c.CallTool(ctx, "fail", nil)
	if err != nil || !res.IsError || res.Content[0].Text != "it failed" {
		t.Fatalf("fail: %+v %v", res, err)
	}
	_, err = c.CallTool(ctx, "echo", []int{1})
	if !errors.As(err, &rpcErr) || rpcErr.Code != CodeInvalidParams {
		t.Fatalf("array args: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTools(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	if name != "http" && name != "http-sse" { // httptest keeps its own goroutines until Cleanup
		waitGoroutines(t, base)
	}
}

func TestClientCancelSendsNotification(t *testing.T) {
	cancelled := make(chan struct{}, 4)
	started := make(chan struct{}, 4)
	newSrv := func() *Server {
		s := protoServer(testTool{Tool{Name: "slow"}, func(ctx context.Context, _ json.RawMessage) (*CallToolResult, error) {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				cancelled <- struct{}{}
				return nil, ctx.Err()
			case <-time.After(30 * time.Second):
				return TextResult("done"), nil
			}
		}})
		return s
	}
	for name, mk := range clientFactories(t, newSrv) {
		t.Run(name, func(t *testing.T) {
			c := mk()
			defer c.Close()
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-started; cancel() }()
			_, err := c.CallTool(ctx, "slow", nil)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v", err)
			}
			select {
			case <-cancelled:
			case <-time.After(10 * time.Second):
				t.Fatal("server tool not cancelled")
			}
			// The connection is still usable.
			if err := c.Ping(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestHTTPClientHeadersAndErrors(t *testing.T) {
	var got http.Header
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			io.WriteString(w, `{"error":"Unauthorized","message":"Invalid or missing authentication token"}`)
			return
		}
		w.Header().Set("Mcp-Session-Id", "s1")
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n: comment\ndata: {\"jsonrpc\":\"2.0\",\n")
		body, _ := io.ReadAll(r.Body)
		io.WriteString(w, "data: \"id\":"+string(idOf(body))+",\"result\":{}}\n\n")
	}))
	defer ts.Close()
	h := http.Header{}
	h.Set("Authorization", "Bearer tok")
	h.Set("X-Scope-Path", "sub/dir")
	h.Set("X-Root-Dir", "/ws")
	c := NewHTTPClient(ts.URL, HTTPClientOptions{Header: h})
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"Authorization", "X-Scope-Path", "X-Root-Dir"} {
		if got.Get(k) != h.Get(k) {
			t.Fatalf("header %s = %q", k, got.Get(k))
		}
	}
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got.Get("Mcp-Session-Id") != "s1" {
		t.Fatalf("session id not sent back: %v", got)
	}
	bad := NewHTTPClient(ts.URL, HTTPClientOptions{})
	err := bad.Ping(context.Background())
	if !errors.Is(err, ErrHTTPStatus) || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "Invalid or missing authentication token") {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamClientServerGone(t *testing.T) {
	cr, sw := io.Pipe()
	_, cw := io.Pipe()
	c := NewStreamClient(pipeRWC{cr, io.Discard, func() error { cw.Close(); cr.Close(); return nil }}, ClientOptions{})
	errc := make(chan error, 1)
	go func() { errc <- c.Ping(context.Background()) }()
	time.Sleep(20 * time.Millisecond)
	sw.Close() // server exits without answering
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("call hangs after the server went away")
	}
	c.Close()
}
