package agentbe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentbe/agent-backend/mcp"
)

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// checkHeapFlat fails when the live heap grew by more than slack bytes.
func checkHeapFlat(t *testing.T, before uint64, slack uint64, what string) {
	t.Helper()
	if after := heapInUse(); after > before+slack {
		t.Errorf("%s: live heap grew from %d to %d bytes", what, before, after)
	}
}

// TestLeakScopedHTTPRequests: every MCP HTTP request with X-Scope-Path made a
// scope that held a registration and a directory fd until Destroy (200
// requests took a server from 18 to 219 fds). With HTTPOptions.Release
// destroying it, 10,000 scoped requests leave fds, goroutines, heap and the
// backend's scope set where they were.
func TestLeakScopedHTTPRequests(t *testing.T) {
	l := ctLocal(t, LocalConfig{})
	for i := range 16 {
		if err := l.Mkdir(context.Background(), "tenants/t"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	var made sync.Map // *mcp.Server -> *Scope
	built := 0
	h := mcp.NewHTTPHandler(func(r *http.Request) (*mcp.Server, error) {
		built++
		s, err := l.Scope(r.Header.Get("X-Scope-Path"), ScopeOptions{})
		if err != nil {
			return nil, err
		}
		srv := NewMCPServer(s)
		made.Store(srv, s)
		return srv, nil
	}, mcp.HTTPOptions{Release: func(r *http.Request, srv *mcp.Server) {
		if s, ok := made.LoadAndDelete(srv); ok {
			s.(*Scope).Destroy(r.Context())
		}
	}})
	post := func(i int) {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_directory","arguments":{"path":"."}}}`
		if i%4 == 0 {
			body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"f","content":"x"}}}`
		}
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Scope-Path", "tenants/t"+strconv.Itoa((i+16)%16))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK || strings.Contains(w.Body.String(), `"isError":true`) {
			t.Fatalf("request %d: %d %s", i, w.Code, w.Body.String())
		}
	}
	for i := range 100 {
		post(i) // warm up pools and lazily made tables
	}
	heap := heapInUse()
	ctCheckNoLeak(t, 10_000, post)
	checkHeapFlat(t, heap, 2<<20, "10,000 scoped requests")
	if n := l.scopes.len(); n != 0 {
		t.Errorf("%d request scopes still registered", n)
	}
	n := 0
	made.Range(func(any, any) bool { n++; return true })
	if n != 0 {
		t.Errorf("Release was not called for %d servers", n)
	}

	// Requests refused by the method, Accept or Content-Type checks never
	// build a server.
	built = 0
	for _, req := range []*http.Request{
		httptest.NewRequest(http.MethodGet, "/mcp", nil),
		func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
			r.Header.Set("Accept", "text/html")
			r.Header.Set("Content-Type", "application/json")
			return r
		}(),
		func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
			r.Header.Set("Accept", "application/json")
			r.Header.Set("Content-Type", "text/plain")
			return r
		}(),
	} {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	if built != 0 {
		t.Errorf("%d servers built for requests refused by the header checks", built)
	}
}

// TestLeakMCPClientCycles: MCPClient with a scope path never released the
// scope it made (+1 fd per client) and every closed client stayed tracked
// until Destroy (5,000 clients: +9 MB). 5,000 open/close cycles now leave
// fds, goroutines, heap, tracked closers and scopes where they were.
func TestLeakMCPClientCycles(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{})
	closers := len(l.life.closers)
	cycle := func(i int) {
		c, err := MCPClient(ctx, l, MCPOptions{ScopePath: "tenants/t" + strconv.Itoa((i+8)%8)})
		if err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			if _, err := c.CallTool(ctx, "list_directory", map[string]any{"path": "."}); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		cycle(i)
	}
	heap := heapInUse()
	ctCheckNoLeak(t, 5_000, cycle)
	checkHeapFlat(t, heap, 2<<20, "5,000 client cycles")
	if n := len(l.life.closers); n != closers {
		t.Errorf("tracked closers: %d before, %d after closing every client", closers, n)
	}
	if n := l.scopes.len(); n != 0 {
		t.Errorf("%d client scopes still registered", n)
	}

	// The same through MCPTransport on a Memory backend.
	m, err := NewMemory(MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctCheckNoLeak(t, 500, func(i int) {
		rwc, err := MCPTransport(ctx, m, MCPOptions{ScopePath: "s"})
		if err != nil {
			t.Fatal(err)
		}
		rwc.Close()
	})
	if n := len(m.life.closers) + m.scopes.len(); n != 0 {
		t.Errorf("Memory keeps %d closers and scopes", n)
	}
}

// TestDestroyClosesOpenMCPClients: an open client is still closed by Destroy
// (its transport fails), and its scope is released.
func TestDestroyClosesOpenMCPClients(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{})
	c, err := MCPClient(ctx, l, MCPOptions{ScopePath: "sub"})
	if err != nil {
		t.Fatal(err)
	}
	if l.scopes.len() != 1 {
		t.Fatalf("scopes: %d", l.scopes.len())
	}
	if err := l.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTools(ctx); err == nil {
		t.Error("client still works after Destroy")
	}
	if l.scopes.len() != 0 {
		t.Errorf("scopes after Destroy: %d", l.scopes.len())
	}
	c.Close()
}

type countingCloser struct{ closed int }

func (c *countingCloser) Close() error { c.closed++; return nil }

// TestUntrack: a closer whose untrack function ran is not closed by
// Destroy; the others are. Untracking through a scope reaches the root, and
// untracking twice is harmless.
func TestUntrack(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{})
	s, err := l.Scope("sub", ScopeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kept, dropped, viaScope := &countingCloser{}, &countingCloser{}, &countingCloser{}
	base := len(l.life.closers)
	l.Track(kept)
	untrackDropped := l.Track(dropped)
	untrackViaScope := s.Track(viaScope)
	untrackDropped()
	untrackViaScope()
	untrackDropped()
	if n := len(l.life.closers) - base; n != 1 {
		t.Errorf("%d closers tracked, want 1", n)
	}
	l.Destroy(ctx)
	if kept.closed != 1 || dropped.closed != 0 || viaScope.closed != 0 {
		t.Errorf("closed: kept %d, dropped %d, via scope %d", kept.closed, dropped.closed, viaScope.closed)
	}

	m, _ := NewMemory(MemoryConfig{})
	mc := &countingCloser{}
	m.Track(mc)()
	m.Destroy(ctx)
	if mc.closed != 0 {
		t.Error("Memory closed an untracked closer")
	}
}
