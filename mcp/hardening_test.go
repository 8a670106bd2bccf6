package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/mcp"
)

// The tests of this file are reproductions of issue 11 ("Harden the
// library before it faces the network") that concern the protocol: each
// request that took unbounded time or memory now meets a bound. The file
// tools' reproductions are in the root package (mcp_hardening_test.go).

// TestBatchesAreBounded: a batch line of the stdio transport ran every
// element in its own goroutine, without limit. Batches take at most 100
// messages, as over HTTP.
func TestBatchesAreBounded(t *testing.T) {
	s := mcp.NewServer(mcp.Implementation{Name: "t", Version: "1"}, mcp.ServerOptions{}, nil, nil)
	batch := func(n int) []byte {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"ping"}`
		}
		return []byte("[" + strings.Join(parts, ",") + "]")
	}
	if got := string(s.HandleBytes(context.Background(), batch(100))); strings.Count(got, `"result":{}`) != 100 {
		t.Errorf("100 pings: %.200s", got)
	}
	before := runtime.NumGoroutine()
	got := string(s.HandleBytes(context.Background(), batch(200_000)))
	if !strings.Contains(got, `"code":-32600`) || !strings.Contains(got, "Batch must not exceed 100 messages") {
		t.Errorf("200k pings: %.200s", got)
	}
	if after := runtime.NumGoroutine(); after > before+10 {
		t.Errorf("goroutines %d -> %d", before, after)
	}
}

// TestCallTimeoutStopsTools: ServerOptions.CallTimeout cancels a running
// tool, which answers with an error result instead of running on.
func TestCallTimeoutStopsTools(t *testing.T) {
	s := mcp.NewServer(mcp.Implementation{Name: "t", Version: "1"}, mcp.ServerOptions{CallTimeout: 20 * time.Millisecond},
		mcp.NewToolSet(mcp.Tool{Name: "spin", InputSchema: json.RawMessage(`{"type":"object"}`)}),
		func(ctx context.Context, _ mcp.ToolCall) (*mcp.CallToolResult, error) {
			<-ctx.Done() // a tool that works until told to stop
			return nil, ctx.Err()
		})
	got := string(s.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"spin"}}`)))
	if !strings.Contains(got, `"isError":true`) || !strings.Contains(got, "context deadline exceeded") {
		t.Errorf("response %s", got)
	}
}

// TestHTTPReleaseOncePerServer: the release function the server factory
// returns runs exactly once for every Server the factory built, after the
// answer, whatever it is (success, parse error, payload too large,
// notification only, unsupported version), and the factory never runs for
// requests the header checks refuse.
func TestHTTPReleaseOncePerServer(t *testing.T) {
	var built, released int
	srvs := map[*mcp.Server]int{}
	h := mcp.NewHTTPHandler(func(*http.Request) (*mcp.Server, func(), error) {
		built++
		s := mcp.NewServer(mcp.Implementation{Name: "t", Version: "1"}, mcp.ServerOptions{}, nil, nil)
		srvs[s]++
		return s, func() {
			released++
			srvs[s]--
		}, nil
	}, mcp.HTTPOptions{MaxBodyBytes: 1 << 10})
	post := func(body string, hdr map[string]string) int {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for _, c := range []struct {
		body string
		hdr  map[string]string
		code int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil, 200},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Accept": "text/event-stream"}, 200},
		{`{not json`, nil, 400},
		{`"` + strings.Repeat("x", 2<<10) + `"`, nil, 413},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil, 202},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, 400},
		{`{}`, map[string]string{"Accept": "text/html"}, 406},
		{`{}`, map[string]string{"Content-Type": "text/plain"}, 415},
	} {
		if got := post(c.body, c.hdr); got != c.code {
			t.Errorf("%.40q %v: status %d, want %d", c.body, c.hdr, got, c.code)
		}
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/mcp", nil))
	if built != 6 || released != built {
		t.Errorf("built %d servers, released %d; want 6 and 6", built, released)
	}
	for _, n := range srvs {
		if n != 0 {
			t.Error("a server was released a wrong number of times")
		}
	}
}
