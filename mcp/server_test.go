package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// protoServer returns a Server with the dummy tools the protocol tests use,
// and extra.
func protoServer(extra ...testTool) *Server {
	return testServer(Implementation{Name: "agent-backend", Version: "1.2.3"}, ServerOptions{}, append([]testTool{
		testTool{Tool{Name: "echo", Description: "Echo.", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}, func(ctx context.Context, args json.RawMessage) (*CallToolResult, error) {
			var a struct {
				Text string `json:"text"`
			}
			if args != nil {
				if err := json.Unmarshal(args, &a); err != nil {
					return nil, err
				}
			}
			return TextResult(a.Text), nil
		}},
		testTool{Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, args json.RawMessage) (*CallToolResult, error) {
			return nil, errors.New("it failed")
		}},
		testTool{Tool{Name: "panic", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, args json.RawMessage) (*CallToolResult, error) {
			panic("boom")
		}},
		testTool{Tool{Name: "nil", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, args json.RawMessage) (*CallToolResult, error) {
			return nil, nil
		}},
		testTool{Tool{Name: "args", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, args json.RawMessage) (*CallToolResult, error) {
			if args == nil {
				return TextResult("<nil>"), nil
			}
			return TextResult(string(args)), nil
		}},
	}, extra...)...)
}

// jsonEqual compares two JSON texts structurally.
func jsonEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestServerDispatch(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"ping", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"string id", `{"jsonrpc":"2.0","id":"abc","method":"ping"}`, `{"jsonrpc":"2.0","id":"abc","result":{}}`},
		{"float id", `{"jsonrpc":"2.0","id":1.5e3,"method":"ping"}`, `{"jsonrpc":"2.0","id":1.5e3,"result":{}}`},
		{"object id echoed", `{"jsonrpc":"2.0","id":{"a":[1]},"method":"ping"}`, `{"jsonrpc":"2.0","id":{"a":[1]},"result":{}}`},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"result":{}}`},
		{"unknown method", `{"jsonrpc":"2.0","id":2,"method":"resources/list"}`, `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}`},
		{"prompts", `{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`, `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}`},
		{"logging", `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`, `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}`},
		{"completion", `{"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{}}`, `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}`},
		{"parse error", `{"jsonrpc":"2.0",`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{"not object", `42`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{"bad version", `{"jsonrpc":"1.0","id":3,"method":"ping"}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{"method not string", `{"jsonrpc":"2.0","id":4,"method":7}`, `{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{"params scalar", `{"jsonrpc":"2.0","id":5,"method":"ping","params":3}`, `{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{"empty batch", `[]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"nope"},5]`,
			`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}]`},
		{"tools/call unknown", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"MCP error -32602: Tool nope not found"}],"isError":true}}`},
		{"tools/call echo", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a\"<é>\n"}}}`,
			`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a\"<é>\n"}],"structuredContent":{"content":"a\"<é>\n"}}}`},
		{"tools/call empty text kept", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":""}],"structuredContent":{"content":""}}}`},
		{"tools/call error", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"fail"}}`,
			`{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"it failed"}],"isError":true}}`},
		{"tools/call panic", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"panic"}}`,
			`{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"Internal error: tool panic panicked"}],"isError":true}}`},
		{"tools/call nil result", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"nil"}}`,
			`{"jsonrpc":"2.0","id":10,"result":{"content":[]}}`},
		{"tools/call args absent", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"args"}}`,
			`{"jsonrpc":"2.0","id":11,"result":{"content":[{"type":"text","text":"<nil>"}],"structuredContent":{"content":"<nil>"}}}`},
		{"tools/call args null", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"args","arguments":null}}`,
			`{"jsonrpc":"2.0","id":11,"result":{"content":[{"type":"text","text":"<nil>"}],"structuredContent":{"content":"<nil>"}}}`},
		{"tools/call args not object", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"args","arguments":[1]}}`,
			`{"jsonrpc":"2.0","id":12,"error":{"code":-32602,"message":"Invalid params: arguments must be an object"}}`},
		{"tools/call no name", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{}}`,
			`{"jsonrpc":"2.0","id":13,"error":{"code":-32602,"message":"Invalid params: name must be a string"}}`},
		{"initialize no version", `{"jsonrpc":"2.0","id":14,"method":"initialize","params":{}}`,
			`{"jsonrpc":"2.0","id":14,"error":{"code":-32602,"message":"Invalid params: protocolVersion must be a string"}}`},
	}
	s := protoServer()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jsonEqual(t, s.HandleBytes(context.Background(), []byte(c.in)), c.want)
		})
	}
}

func TestServerNotificationsGetNoResponse(t *testing.T) {
	s := protoServer()
	for _, in := range []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":5,"result":{}}`,
		`[{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
	} {
		if out := s.HandleBytes(context.Background(), []byte(in)); out != nil {
			t.Errorf("%s: got response %s", in, out)
		}
	}
}

// TestInitializeGolden checks version negotiation against the reference
// server's capture (interop/testdata/conformance/initialize.json)
// and the 2024-10-07 echo the official SDK also does.
func TestInitializeGolden(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "interop", "testdata", "conformance", "initialize.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		ProtocolVariants []struct {
			Requested string          `json:"requestedProtocolVersion"`
			Result    json.RawMessage `json:"result"`
		} `json:"protocolVariants"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	variants := golden.ProtocolVariants
	if len(variants) < 5 {
		t.Fatalf("golden has %d variants", len(variants))
	}
	s := NewServer(Implementation{Name: "secure-filesystem-server", Version: "0.2.0"}, ServerOptions{}, nil, nil)
	for _, v := range variants {
		in := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + v.Requested + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		jsonEqual(t, s.HandleBytes(context.Background(), []byte(in)), `{"jsonrpc":"2.0","id":0,"result":`+string(v.Result)+`}`)
	}
	in := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-10-07","capabilities":{}}}`
	jsonEqual(t, s.HandleBytes(context.Background(), []byte(in)),
		`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2024-10-07","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"secure-filesystem-server","version":"0.2.0"}}}`)
	s2 := NewServer(Implementation{Name: "n", Title: "T", Version: "v"}, ServerOptions{Instructions: "be nice"}, nil, nil)
	jsonEqual(t, s2.HandleBytes(context.Background(), []byte(in)),
		`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2024-10-07","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"n","title":"T","version":"v"},"instructions":"be nice"}}`)
}

// TestToolsListGolden registers the reference tool definitions and checks
// tools/list reproduces them exactly (twice: the second answer is the
// ToolSet's stored one).
func TestToolsListGolden(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "interop", "testdata", "conformance", "tools-list.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Tools []Tool `json:"tools"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	s := NewServer(Implementation{Name: "x", Version: "1"}, ServerOptions{}, NewToolSet(golden.Tools...),
		func(context.Context, ToolCall) (*CallToolResult, error) { return nil, nil })
	for round := 0; round < 2; round++ {
		out := s.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		jsonEqual(t, out, `{"jsonrpc":"2.0","id":1,"result":`+string(raw)+`}`)
	}
}

// TestServerCancelNotification cancels a running tool through
// notifications/cancelled and checks the request gets no response.
func TestServerCancelNotification(t *testing.T) {
	started := make(chan struct{})
	cause := make(chan error, 1)
	s := testServer(Implementation{Name: "x", Version: "1"}, ServerOptions{}, testTool{Tool{Name: "slow"}, func(ctx context.Context, _ json.RawMessage) (*CallToolResult, error) {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return TextResult("late"), nil
	}})
	done := make(chan []byte)
	go func() {
		done <- s.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"slow"}}`))
	}()
	<-started
	s.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1","reason":"x"}}`))
	select {
	case out := <-done:
		if out != nil {
			t.Fatalf("cancelled request answered: %s", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tool not cancelled")
	}
	if c := <-cause; c != errCancelledByClient {
		t.Fatalf("cause = %v", c)
	}
}

func TestContentMarshal(t *testing.T) {
	cases := []struct {
		c    Content
		want string
	}{
		{Content{Type: "text"}, `{"type":"text","text":""}`},
		{Content{Type: "image", Data: "AAA=", MimeType: "image/png"}, `{"type":"image","data":"AAA=","mimeType":"image/png"}`},
		{Content{Type: "audio", MimeType: "audio/wav"}, `{"type":"audio","data":"","mimeType":"audio/wav"}`},
		{Content{Type: "resource", Resource: &ResourceContents{URI: "file:///a", Blob: "QQ=="}}, `{"type":"resource","resource":{"uri":"file:///a","blob":"QQ=="}}`},
		{Content{Type: "resource", Resource: &ResourceContents{URI: "file:///e", MimeType: "application/octet-stream"}}, `{"type":"resource","resource":{"uri":"file:///e","mimeType":"application/octet-stream","blob":""}}`},
		{Content{Type: "resource", Resource: &ResourceContents{URI: "file:///t", MimeType: "text/plain"}}, `{"type":"resource","resource":{"uri":"file:///t","mimeType":"text/plain","text":""}}`},
		{Content{Type: "resource", Resource: &ResourceContents{URI: "file:///x", Text: "hi"}}, `{"type":"resource","resource":{"uri":"file:///x","text":"hi"}}`},
		{Content{Type: "text", Text: "\x00\x1f\t\u2028\xff<&>"}, `{"type":"text","text":"\u0000\u001f\t\u2028\ufffd<&>"}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.c)
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, b, c.want)
		if !json.Valid(b) {
			t.Fatalf("invalid JSON %q", b)
		}
	}
	r := CallToolResult{Content: []Content{{Type: "text", Text: "x"}}, StructuredContent: map[string]any{"content": []int{1}}, IsError: true}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, b, `{"content":[{"type":"text","text":"x"}],"structuredContent":{"content":[1]},"isError":true}`)
	var back CallToolResult
	if err := json.Unmarshal(b, &back); err != nil || !back.IsError || back.Content[0].Text != "x" {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}

func TestManyToolsLookup(t *testing.T) {
	var tools []testTool
	for i := 0; i < 3*linearLookupMax; i++ {
		name := "t" + strings.Repeat("x", i)
		tools = append(tools, testTool{Tool{Name: name}, func(context.Context, json.RawMessage) (*CallToolResult, error) { return TextResult(name), nil }})
	}
	tools = append(tools, testTool{Tool{Name: "t"}, func(context.Context, json.RawMessage) (*CallToolResult, error) { return TextResult("replaced"), nil }})
	s := testServer(Implementation{Name: "x", Version: "1"}, ServerOptions{}, tools...)
	if len(s.Tools()) != 3*linearLookupMax {
		t.Fatalf("%d tools", len(s.Tools()))
	}
	for _, name := range []string{"t", "t" + strings.Repeat("x", 3*linearLookupMax-1), "txxx"} {
		out := s.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`"}}`))
		want := name
		if name == "t" {
			want = "replaced"
		}
		if !strings.Contains(string(out), `"text":"`+want+`"`) {
			t.Fatalf("%s: %s", name, out)
		}
	}
}

// TestServerOnPanic: a tool's panic reaches OnPanic, from where the stack
// still shows the panicking handler.
func TestServerOnPanic(t *testing.T) {
	var got []string
	var stack string
	s := testServer(Implementation{Name: "t", Version: "1"}, ServerOptions{OnPanic: func(tool string, v any) {
		got = append(got, tool+": "+v.(string))
		stack = string(debug.Stack())
	}}, testTool{Tool{Name: "panic", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, args json.RawMessage) (*CallToolResult, error) {
			panic("boom")
		}})
	out := s.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"panic"}}`))
	jsonEqual(t, out, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Internal error: tool panic panicked"}],"isError":true}}`)
	if len(got) != 1 || got[0] != "panic: boom" || !strings.Contains(stack, "TestServerOnPanic") {
		t.Fatalf("OnPanic saw %q, stack:\n%s", got, stack)
	}
}
