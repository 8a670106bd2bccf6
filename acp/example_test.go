package acp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/acp"
)

// Serve the ACP proxy and file API over a local workspace. A daemon would
// authenticate the request and return its scope from Resolve.
func ExampleNewHandler() {
	dir, _ := os.MkdirTemp("", "acp-example")
	defer os.RemoveAll(dir)
	ws, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ws.Destroy(context.Background())
	mine, _ := acp.ParseAgentFlag("mine=node .agents/mine.mjs")
	reg := acp.DefaultRegistry()
	_ = reg.Set(mine)
	h, err := acp.NewHandler(acp.Config{
		Agents: reg,
		Resolve: func(r *http.Request) (agentbe.Backend, func(), error) {
			return ws, nil, nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	req, _ := http.NewRequest("PUT", srv.URL+"/v1/fs/file?path=notes/hello.txt", strings.NewReader("hi"))
	resp, _ := http.DefaultClient.Do(req)
	resp.Body.Close()
	resp, _ = http.Get(srv.URL + "/v1/fs/file?path=notes/hello.txt")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 hi
}

// The replay ring keeps the newest events; Since reports a gap when the
// asked position was evicted.
func ExampleRing() {
	r := acp.NewRing(2, 1<<20)
	for _, m := range []string{`{"a":1}`, `{"b":2}`, `{"c":3}`, `{"d":4}`} {
		r.Append([]byte(m))
	}
	s := r.Since(0)
	fmt.Println(len(s.Events), s.Oldest, s.Last, r.Since(1).Gap)
	// Output: 2 3 4 true
}
