package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/agentbe/agent-backend/mcp"
)

// greeterTools are the tools of greeter, defined once.
var greeterTools = mcp.NewToolSet(mcp.Tool{
	Name:        "greet",
	Description: "Greets someone.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
})

func greeter() *mcp.Server {
	return mcp.NewServer(mcp.Implementation{Name: "example", Version: "1.0.0"}, mcp.ServerOptions{}, greeterTools,
		func(ctx context.Context, call mcp.ToolCall) (*mcp.CallToolResult, error) {
			var a struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(call.Arguments, &a); err != nil || a.Name == "" {
				return mcp.InvalidArgumentsResult(call.Name, "name is required"), nil
			}
			return mcp.TextResult("Hello, " + a.Name + "!"), nil
		})
}

// The dispatcher works on raw messages, without any transport.
func ExampleServer_HandleBytes() {
	s := greeter()
	out := s.HandleBytes(context.Background(),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`))
	fmt.Println(string(out))
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Hello, Ada!"}],"structuredContent":{"content":"Hello, Ada!"}}}
}

// A stateless Streamable HTTP endpoint builds a Server per request; the
// factory may refuse a request with an *mcp.HTTPError, and returns what
// releases the request's resources (nothing here).
func ExampleNewHTTPHandler() {
	h := mcp.NewHTTPHandler(func(r *http.Request) (*mcp.Server, func(), error) {
		if r.Header.Get("Authorization") != "Bearer secret" {
			return nil, nil, &mcp.HTTPError{Status: http.StatusUnauthorized,
				Body: map[string]string{"error": "Unauthorized", "message": "Invalid or missing authentication token"}}
		}
		return greeter(), nil, nil
	}, mcp.HTTPOptions{})
	ts := httptest.NewServer(h)
	defer ts.Close()

	c := mcp.NewHTTPClient(ts.URL, mcp.HTTPClientOptions{Header: http.Header{"Authorization": {"Bearer secret"}}})
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.CallTool(ctx, "greet", map[string]string{"name": "Grace"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// Hello, Grace!
}

// An in-process client talks to a Server directly.
func ExampleNewInProcessClient() {
	c := mcp.NewInProcessClient(greeter(), mcp.ClientOptions{})
	defer c.Close()
	tools, _ := c.ListTools(context.Background())
	res, _ := c.CallTool(context.Background(), "greet", nil)
	fmt.Println(tools[0].Name, res.IsError, res.Content[0].Text)
	// Output:
	// greet true MCP error -32602: Input validation error: Invalid arguments for tool greet: name is required
}

// A daemon serving many workspaces prepares its tool definitions once and
// binds them per request: NewServer shares the ToolSet, and the handler
// receives the tool called (its name and its index in the set).
func ExampleNewServer() {
	tools := mcp.NewToolSet(
		mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)},
		mcp.Tool{Name: "shout", InputSchema: json.RawMessage(`{"type":"object"}`)},
	)
	serverFor := func(user string) *mcp.Server {
		return mcp.NewServer(mcp.Implementation{Name: "example", Version: "1.0.0"}, mcp.ServerOptions{}, tools,
			func(ctx context.Context, call mcp.ToolCall) (*mcp.CallToolResult, error) {
				if call.Name == "shout" {
					return mcp.TextResult("HI, " + user), nil
				}
				return mcp.TextResult(user), nil
			})
	}
	for _, user := range []string{"ada", "bob"} {
		out := serverFor(user).HandleBytes(context.Background(),
			[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shout"}}`))
		fmt.Println(string(out))
	}
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"HI, ada"}],"structuredContent":{"content":"HI, ada"}}}
	// {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"HI, bob"}],"structuredContent":{"content":"HI, bob"}}}
}
