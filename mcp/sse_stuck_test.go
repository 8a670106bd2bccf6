package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// TestSSEStuckReader: a tool that reports progress without end to a client
// that reads nothing of its SSE answer. Once a write has waited
// sseWriteTimeout the stream ends and the call is cancelled; before, the
// write blocked for as long as the client kept its connection open, and
// the tool ran on. Both ways to an SSE answer: the upgrade of a single
// request's answer, and a client that accepts only text/event-stream.
func TestSSEStuckReader(t *testing.T) {
	old := sseWriteTimeout
	sseWriteTimeout = 300 * time.Millisecond
	t.Cleanup(func() { sseWriteTimeout = old })
	for _, accept := range []string{"application/json, text/event-stream", "text/event-stream"} {
		t.Run(accept, func(t *testing.T) {
			toolEnded := make(chan error, 1)
			flood := func(ctx context.Context, c ToolCall) (*CallToolResult, error) {
				pad := strings.Repeat("x", 4096)
				for ctx.Err() == nil {
					c.Progress(pad)
				}
				toolEnded <- ctx.Err()
				return nil, ctx.Err()
			}
			srv := func() *Server {
				return NewServer(Implementation{Name: "p", Version: "1"}, ServerOptions{},
					NewToolSet(Tool{Name: "flood", InputSchema: json.RawMessage(`{"type":"object"}`)}), flood)
			}
			handlerEnded := make(chan struct{}, 1)
			h := NewHTTPHandler(func(*http.Request) (*Server, func(), error) { return srv(), nil, nil }, HTTPOptions{})
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeHTTP(w, r)
				handlerEnded <- struct{}{}
			}))
			defer ts.Close()
			defer ts.CloseClientConnections()

			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","arguments":{},"_meta":{"progressToken":"p"}}}`
			status := testenv.StuckClient(t, ts.URL, fmt.Sprintf("POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
				"Accept: %s\r\nMCP-Protocol-Version: 2025-06-18\r\nContent-Length: %d\r\n\r\n%s",
				strings.TrimPrefix(ts.URL, "http://"), accept, len(body), body))
			if !strings.Contains(status, " 200 ") {
				t.Fatalf("status %q", status)
			}
			// The client reads nothing more.
			select {
			case <-handlerEnded:
			case <-time.After(20 * time.Second):
				t.Fatal("the request still runs 20 s after its client stopped reading")
			}
			if err := <-toolEnded; err == nil {
				t.Error("the tool ended without its call being cancelled")
			}
		})
	}
}
