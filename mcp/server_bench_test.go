package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var bench1KiB = strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n", 16)

// benchServer is a fresh Server with the 14 reference tool definitions
// (as the daemon builds per request) whose read_text_file returns 1 KiB.
func benchServer(tb testing.TB) func() *Server {
	raw, err := os.ReadFile(filepath.Join("..", "interop", "testdata", "conformance", "tools-list.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var golden struct {
		Tools []Tool `json:"tools"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		tb.Fatal(err)
	}
	h := func(context.Context, ToolCall) (*CallToolResult, error) { return TextResult(bench1KiB), nil }
	tools := NewToolSet(golden.Tools...)
	return func() *Server {
		return NewServer(Implementation{Name: "agent-backend", Version: "0"}, ServerOptions{}, tools, h)
	}
}

const benchCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"/ws/bench/read1k.txt"}}}`
const benchList = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`

// BenchmarkDispatchToolsCall: decode, dispatch and encode one tools/call
// on a long-lived Server.
func BenchmarkDispatchToolsCall(b *testing.B) {
	s := benchServer(b)()
	msg := []byte(benchCall)
	b.ReportAllocs()
	for b.Loop() {
		if s.HandleBytes(context.Background(), msg) == nil {
			b.Fatal("no response")
		}
	}
}

// BenchmarkDispatchFreshServerToolsCall: as the daemon does, a new Server
// with 14 tools per request.
func BenchmarkDispatchFreshServerToolsCall(b *testing.B) {
	mk := benchServer(b)
	msg := []byte(benchCall)
	b.ReportAllocs()
	for b.Loop() {
		if mk().HandleBytes(context.Background(), msg) == nil {
			b.Fatal("no response")
		}
	}
}

// BenchmarkDispatchFreshServerToolsList: tools/list on a new Server per
// request (the ToolSet's list is encoded once).
func BenchmarkDispatchFreshServerToolsList(b *testing.B) {
	mk := benchServer(b)
	msg := []byte(benchList)
	b.ReportAllocs()
	for b.Loop() {
		if mk().HandleBytes(context.Background(), msg) == nil {
			b.Fatal("no response")
		}
	}
}

func benchHTTP(b *testing.B, body string) {
	mk := benchServer(b)
	h := NewHTTPHandler(func(*http.Request) (*Server, func(), error) { return mk(), nil, nil }, HTTPOptions{})
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/mcp", bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkHTTPHandlerToolsCall: the HTTP handler without the network
// (fresh Server per request, 1 KiB result).
func BenchmarkHTTPHandlerToolsCall(b *testing.B) { benchHTTP(b, benchCall) }

// BenchmarkHTTPHandlerToolsList: tools/list through the HTTP handler.
func BenchmarkHTTPHandlerToolsList(b *testing.B) { benchHTTP(b, benchList) }

// benchModernCall is a 2026-07-28 tools/call of a long-running tool whose
// _meta carries every member a client may send (version, capabilities,
// client info, log level, trace context, progress token), served by a
// Server keeping tasks: the request's era, envelope, trace, progress and
// task eligibility all look at _meta.
const benchModernCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"command":"true"},"_meta":{` +
	`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"},"io.modelcontextprotocol/logLevel":"info",` +
	`"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","progressToken":"p-1"}}}`

// BenchmarkDispatchToolsCall2026: decode, dispatch and encode one modern
// tools/call (benchModernCall) on a long-lived Server.
func BenchmarkDispatchToolsCall2026(b *testing.B) {
	st := NewTaskStore(TaskOptions{})
	defer st.Close()
	tools := NewToolSet(Tool{Name: "exec", InputSchema: json.RawMessage(`{"type":"object"}`), LongRunning: true})
	s := NewServer(Implementation{Name: "agent-backend", Version: "0"}, ServerOptions{Tasks: st}, tools,
		func(context.Context, ToolCall) (*CallToolResult, error) { return TextResult("ok"), nil })
	msg := []byte(benchModernCall)
	b.ReportAllocs()
	for b.Loop() {
		if s.HandleBytes(context.Background(), msg) == nil {
			b.Fatal("no response")
		}
	}
}
