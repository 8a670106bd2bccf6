package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// progressServer offers "tick", which reports progress n times (its
// argument) and then answers "ticked"; a call whose handler gets no
// Progress answers "no progress".
func progressServer() *Server {
	return NewServer(Implementation{Name: "p", Version: "1"}, ServerOptions{},
		NewToolSet(Tool{Name: "tick", InputSchema: json.RawMessage(`{"type":"object"}`)}),
		func(ctx context.Context, c ToolCall) (*CallToolResult, error) {
			if c.Progress == nil {
				return TextResult("no progress"), nil
			}
			var a struct{ N int }
			json.Unmarshal(c.Arguments, &a)
			for i := range a.N {
				msg := ""
				if i > 0 {
					msg = strings.Repeat("x", i) + " \"so far\""
				}
				c.Progress(msg)
			}
			return TextResult("ticked"), nil
		})
}

// checkProgressMessages checks msgs: n notifications/progress for token
// (progress 1..n, messages as tick sends them), then the response "ticked"
// to id 5.
func checkProgressMessages(t *testing.T, msgs []string, token string, n int) {
	t.Helper()
	if len(msgs) != n+1 {
		t.Fatalf("%d messages, want %d:\n%s", len(msgs), n+1, strings.Join(msgs, "\n"))
	}
	for i, m := range msgs[:n] {
		var note struct {
			Method string
			Params struct {
				ProgressToken json.RawMessage
				Progress      float64
				Message       *string
			}
		}
		if err := json.Unmarshal([]byte(m), &note); err != nil || note.Method != "notifications/progress" ||
			string(note.Params.ProgressToken) != token || note.Params.Progress != float64(i+1) {
			t.Fatalf("notification %d: %s (%v)", i, m, err)
		}
		if i == 0 && note.Params.Message != nil || i > 0 && (note.Params.Message == nil || *note.Params.Message != strings.Repeat("x", i)+` "so far"`) {
			t.Fatalf("notification %d message: %s", i, m)
		}
	}
	jsonEqual(t, []byte(msgs[n]), `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"ticked"}],"structuredContent":{"content":"ticked"}}}`)
}

func TestProgressStdio(t *testing.T) {
	for _, token := range []string{`"tok-1"`, `42`} {
		in := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"tick","arguments":{"n":3},"_meta":{"progressToken":` + token + `}}}` + "\n"
		pr, pw := io.Pipe()
		go func() {
			ServeStdio(context.Background(), progressServer(), strings.NewReader(in), pw)
			pw.Close()
		}()
		var msgs []string
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			msgs = append(msgs, sc.Text())
		}
		checkProgressMessages(t, msgs, token, 3)
	}
	// Without a progressToken (or with one that is not a string or a
	// number) the tool gets no Progress.
	for _, meta := range []string{``, `,"_meta":{}`, `,"_meta":{"progressToken":null}`, `,"_meta":{"progressToken":{}}`} {
		in := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"tick","arguments":{"n":3}` + meta + `}}` + "\n"
		var out strings.Builder
		ServeStdio(context.Background(), progressServer(), strings.NewReader(in), &out)
		if !strings.Contains(out.String(), "no progress") || strings.Count(out.String(), "\n") != 1 {
			t.Fatalf("%s: %s", meta, out.String())
		}
	}
}

// Over Streamable HTTP the response of a call that reports progress
// becomes an SSE stream: the notifications, then the response. Without
// progress it stays JSON; a client accepting only JSON gets no progress.
func TestProgressHTTP(t *testing.T) {
	ts := httptest.NewServer(NewHTTPHandler(func(*http.Request) (*Server, func(), error) {
		return progressServer(), nil, nil
	}, HTTPOptions{}))
	defer ts.Close()
	post := func(accept, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	sseData := func(body string) []string {
		var msgs []string
		for _, l := range strings.Split(body, "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				msgs = append(msgs, d)
			}
		}
		return msgs
	}
	call := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"tick","arguments":{"n":4},"_meta":{"progressToken":"p"}}}`
	resp, body := post("application/json, text/event-stream", call)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	checkProgressMessages(t, sseData(body), `"p"`, 4)

	// A tool that reports nothing: plain JSON.
	resp, body = post("application/json, text/event-stream", strings.Replace(call, `"n":4`, `"n":0`, 1))
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%s\n%s", resp.Header.Get("Content-Type"), body)
	}
	// A client that does not accept SSE gets no progress.
	resp, body = post("application/json", call)
	if resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, "no progress") {
		t.Fatalf("%s\n%s", resp.Header.Get("Content-Type"), body)
	}
	// A client accepting only SSE gets them on its stream.
	resp, body = post("text/event-stream", call)
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%s\n%s", resp.Header.Get("Content-Type"), body)
	}
	checkProgressMessages(t, sseData(body), `"p"`, 4)
}

// Progress reported after the handler returned is dropped: nothing
// follows the response.
func TestProgressAfterReturnDropped(t *testing.T) {
	var late func(string)
	s := NewServer(Implementation{Name: "p", Version: "1"}, ServerOptions{},
		NewToolSet(Tool{Name: "leak", InputSchema: json.RawMessage(`{"type":"object"}`)}),
		func(ctx context.Context, c ToolCall) (*CallToolResult, error) {
			late = c.Progress
			return TextResult("done"), nil
		})
	var sent []string
	ctx := withNotifier(context.Background(), notifyFunc(func(b []byte) { sent = append(sent, string(b)) }))
	m, _ := DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"leak","_meta":{"progressToken":1}}}`))
	if resp := s.handle(ctx, m, transportCancels); resp == nil || late == nil {
		t.Fatalf("no response or no Progress")
	}
	late("too late")
	if len(sent) != 0 {
		t.Fatalf("sent after the response: %q", sent)
	}
}
