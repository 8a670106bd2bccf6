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
	"time"
)

// stdioSession drives ServeStdio over pipes, one line at a time.
type stdioSession struct {
	t     *testing.T
	w     io.WriteCloser
	lines chan map[string]any
	done  chan error
}

func newStdioSession(t *testing.T, s *Server) *stdioSession {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss := &stdioSession{t: t, w: inW, lines: make(chan map[string]any, 64), done: make(chan error, 1)}
	go func() {
		ss.done <- ServeStdio(context.Background(), s, inR, outW)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var v any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Errorf("line %q: %v", sc.Text(), err)
			}
			m, _ := v.(map[string]any)
			if arr, ok := v.([]any); ok && len(arr) > 0 {
				m = map[string]any{"batch": arr[0]} // the first answer of a batch
			}
			ss.lines <- m
		}
		close(ss.lines)
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-ss.done:
		case <-time.After(10 * time.Second):
			t.Error("ServeStdio did not return after EOF")
		}
	})
	return ss
}

func (ss *stdioSession) send(line string) {
	ss.t.Helper()
	if _, err := ss.w.Write([]byte(line + "\n")); err != nil {
		ss.t.Fatal(err)
	}
}

// next returns the next message written.
func (ss *stdioSession) next() map[string]any {
	ss.t.Helper()
	select {
	case m, ok := <-ss.lines:
		if !ok {
			ss.t.Fatal("the server closed its output")
		}
		return m
	case <-time.After(10 * time.Second):
		ss.t.Fatal("no message from the server")
	}
	return nil
}

// quiet fails if a message arrives within d.
func (ss *stdioSession) quiet(d time.Duration) {
	ss.t.Helper()
	select {
	case m := <-ss.lines:
		ss.t.Fatalf("unexpected message %v", m)
	case <-time.After(d):
	}
}

func listenLine(id, filter, meta string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{"notifications":` + filter + `,` + meta + `}}`
}

func params(m map[string]any) map[string]any { p, _ := m["params"].(map[string]any); return p }

func subscriptionID(m map[string]any) any {
	var meta map[string]any
	if p := params(m); p != nil {
		meta, _ = p["_meta"].(map[string]any)
	} else if r, ok := m["result"].(map[string]any); ok {
		meta, _ = r["_meta"].(map[string]any)
	}
	return meta[MetaSubscriptionID]
}

// wantAck checks an acknowledgement of subscription id honouring want
// (the JSON of its notifications member).
func wantAck(t *testing.T, m map[string]any, id any, want string) {
	t.Helper()
	got, _ := json.Marshal(params(m)["notifications"])
	if m["method"] != "notifications/subscriptions/acknowledged" || subscriptionID(m) != id || string(got) != want {
		t.Fatalf("ack %v, want subscription %v honouring %s", m, id, want)
	}
}

// wantTask checks a notifications/tasks of subscription id.
func wantTask(t *testing.T, m map[string]any, id any, taskID, status string) map[string]any {
	t.Helper()
	p := params(m)
	if m["method"] != "notifications/tasks" || subscriptionID(m) != id || p["taskId"] != taskID || p["status"] != status {
		t.Fatalf("notification %v, want task %s %s on subscription %v", m, taskID, status, id)
	}
	if _, ok := p["resultType"]; ok {
		t.Fatalf("a task notification carries no resultType: %v", m)
	}
	return p
}

// wantEnd checks the graceful end of subscription id.
func wantEnd(t *testing.T, m map[string]any, id any) {
	t.Helper()
	r, _ := m["result"].(map[string]any)
	if m["id"] != id || r == nil || r["resultType"] != "complete" || subscriptionID(m) != id {
		t.Fatalf("end %v, want the result of subscription %v", m, id)
	}
}

// TestListenStdio: over stdio a listen is acknowledged with what it
// honours (the caller's tasks it names; no list changes), then carries
// each task's state and its final state with the result, and ends
// gracefully once every task it follows has ended; one honouring nothing
// ends at once; a cancelled one says nothing more; reading's end ends one.
func TestListenStdio(t *testing.T) {
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: -1})
	defer st.Close()
	ss := newStdioSession(t, taskServer(j, st, ""))

	call := func(id, job string) string {
		ss.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"job","arguments":{"id":"` + job + `","output":"out-` + job + `"},` + declareTasks + `}}`)
		r, _ := ss.next()["result"].(map[string]any)
		if r["resultType"] != "task" {
			t.Fatalf("tools/call: %v", r)
		}
		return r["taskId"].(string)
	}
	a, b := call("1", "a"), call("2", "b")
	j.waitStarted(t, "a")

	// Nothing honoured: acknowledged with nothing, ended at once.
	ss.send(listenLine(`"n"`, `{"toolsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["file:///x"]}`, meta2026))
	wantAck(t, ss.next(), "n", `{}`)
	wantEnd(t, ss.next(), "n")

	ss.send(listenLine(`3`, `{"toolsListChanged":true,"taskIds":["`+a+`","nope","`+b+`","`+a+`"]}`, declareTasks))
	wantAck(t, ss.next(), 3.0, `{"taskIds":["`+a+`","`+b+`"]}`)
	p := wantTask(t, ss.next(), 3.0, a, "working")
	if msg, _ := p["statusMessage"].(string); !strings.Contains(msg, "out-a") {
		t.Errorf("working task's statusMessage %q lacks its output", msg)
	}
	wantTask(t, ss.next(), 3.0, b, "working")
	ss.quiet(50 * time.Millisecond)
	j.finish("b", "B done")
	p = wantTask(t, ss.next(), 3.0, b, "completed")
	if res, _ := json.Marshal(p["result"]); !strings.Contains(string(res), "B done") {
		t.Errorf("completed task's result %s", res)
	}
	// Other requests are served while the listen is open.
	ss.send(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + meta2026 + `}}`)
	if m := ss.next(); m["id"] != 4.0 {
		t.Fatalf("tools/list: %v", m)
	}
	j.finish("a", "A done")
	wantTask(t, ss.next(), 3.0, a, "completed")
	wantEnd(t, ss.next(), 3.0)

	// A finished task: its final state at once, then the end.
	ss.send(listenLine(`5`, `{"taskIds":["`+a+`"]}`, declareTasks))
	wantAck(t, ss.next(), 5.0, `{"taskIds":["`+a+`"]}`)
	wantTask(t, ss.next(), 5.0, a, "completed")
	wantEnd(t, ss.next(), 5.0)

	// Cancelled by the client: nothing more for it.
	c := call("6", "c")
	ss.send(listenLine(`7`, `{"taskIds":["`+c+`"]}`, declareTasks))
	wantAck(t, ss.next(), 7.0, `{"taskIds":["`+c+`"]}`)
	wantTask(t, ss.next(), 7.0, c, "working")
	ss.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	ss.quiet(50 * time.Millisecond)
	j.finish("c", "C done")
	ss.quiet(50 * time.Millisecond)

	// The end of the input ends an open listen gracefully.
	d := call("8", "d")
	ss.send(listenLine(`9`, `{"taskIds":["`+d+`"]}`, declareTasks))
	wantAck(t, ss.next(), 9.0, `{"taskIds":["`+d+`"]}`)
	wantTask(t, ss.next(), 9.0, d, "working")
	ss.w.Close()
	wantEnd(t, ss.next(), 9.0)
	j.finish("d", "D done")
}

// TestListenErrors: what a listen is refused with, and where.
func TestListenErrors(t *testing.T) {
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: -1})
	defer st.Close()
	s := taskServer(j, st, "")
	ss := newStdioSession(t, s)
	ss.send(`{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{` + meta2026 + `}}`)
	ss.next()
	for _, tc := range []struct {
		line string
		code float64
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{` + meta2026 + `}}`, CodeInvalidParams},
		{listenLine(`2`, `[]`, meta2026), CodeInvalidParams},
		{listenLine(`3`, `{"taskIds":"x"}`, declareTasks), CodeInvalidParams},
		{listenLine(`4`, `{"taskIds":[1]}`, declareTasks), CodeInvalidParams},
		// Task notifications need the extension declared on the request.
		{listenLine(`5`, `{"taskIds":["x"]}`, meta2026), CodeMissingClientCapability},
		// More ids than the store keeps tasks (256 by default).
		{listenLine(`7`, `{"taskIds":[`+strings.Repeat(`"x",`, 256)+`"x"]}`, declareTasks), CodeInvalidParams},
		// A batch has no stream for the notifications.
		{`[` + listenLine(`6`, `{}`, meta2026) + `]`, CodeInvalidRequest},
	} {
		ss.send(tc.line)
		m := ss.next()
		if arr, ok := m["batch"]; ok {
			m = arr.(map[string]any)
		}
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != tc.code {
			t.Errorf("%s:\n got %v, want error %v", tc.line, m, tc.code)
		}
	}
	// The 2025 eras have no listen.
	if _, e := rpc(t, s, "subscriptions/listen", `{"notifications":{}}`); e == nil || e.Code != CodeMethodNotFound {
		t.Errorf("legacy listen: %v", e)
	}
	// Handle has no stream either.
	if _, e := rpc(t, s, "subscriptions/listen", `{"notifications":{},`+meta2026+`}`); e == nil || e.Code != CodeInvalidRequest {
		t.Errorf("listen through Handle: %v", e)
	}
}

// TestListenHTTP: over Streamable HTTP a listen is an SSE response: the
// acknowledgement, the task notifications, the graceful end. Another
// owner's task is not honoured; closing the stream cancels the listen;
// EndSubscriptions ends open ones; refusals are plain JSON with their
// status.
func TestListenHTTP(t *testing.T) {
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: -1})
	defer st.Close()
	ts := httptest.NewServer(NewHTTPHandler(func(r *http.Request) (*Server, func(), error) {
		return taskServer(j, st, r.Header.Get("X-Owner")), nil, nil
	}, HTTPOptions{}))
	defer ts.Close()
	open := func(ctx context.Context, owner, accept, body string) (*http.Response, *bufio.Reader) {
		t.Helper()
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		json.Unmarshal([]byte(body), &msg)
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		req.Header.Set("X-Owner", owner)
		for k, v := range modernHeaders(msg.Method, msg.Params.Name) {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp, bufio.NewReader(resp.Body)
	}
	event := func(br *bufio.Reader) map[string]any {
		t.Helper()
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended: %v", err)
			}
			if d, ok := strings.CutPrefix(strings.TrimSpace(l), "data: "); ok {
				var m map[string]any
				if err := json.Unmarshal([]byte(d), &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
		}
	}
	sse := "application/json, text/event-stream"
	call := func(owner, job string) string {
		t.Helper()
		_, br := open(context.Background(), owner, sse, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"job","arguments":{"id":"`+job+`"},`+declareTasks+`}}`)
		var out struct{ Result map[string]any }
		if err := json.NewDecoder(br).Decode(&out); err != nil || out.Result["resultType"] != "task" {
			t.Fatalf("tools/call: %v %v", out, err)
		}
		return out.Result["taskId"].(string)
	}
	a := call("alice", "a")
	other := call("bob", "b")

	resp, br := open(context.Background(), "alice", sse, listenLine(`"L"`, `{"taskIds":["`+a+`","`+other+`"]}`, declareTasks))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	wantAck(t, event(br), "L", `{"taskIds":["`+a+`"]}`)
	wantTask(t, event(br), "L", a, "working")
	j.finish("a", "A done")
	wantTask(t, event(br), "L", a, "completed")
	wantEnd(t, event(br), "L")

	// Nothing honoured: ack and end on one stream.
	_, br = open(context.Background(), "alice", sse, listenLine(`1`, `{"toolsListChanged":true}`, meta2026))
	wantAck(t, event(br), 1.0, `{}`)
	wantEnd(t, event(br), 1.0)

	// A client accepting only SSE: the same stream.
	_, br = open(context.Background(), "alice", "text/event-stream", listenLine(`"s"`, `{}`, meta2026))
	wantAck(t, event(br), "s", `{}`)
	wantEnd(t, event(br), "s")

	// Closing the stream cancels the listen; the task runs on.
	c := call("alice", "c")
	ctx, cancel := context.WithCancel(context.Background())
	_, br = open(ctx, "alice", sse, listenLine(`2`, `{"taskIds":["`+c+`"]}`, declareTasks))
	wantAck(t, event(br), 2.0, `{"taskIds":["`+c+`"]}`)
	wantTask(t, event(br), 2.0, c, "working")
	cancel()
	// EndSubscriptions ends an open listen with its result.
	_, br = open(context.Background(), "alice", sse, listenLine(`3`, `{"taskIds":["`+c+`"]}`, declareTasks))
	wantAck(t, event(br), 3.0, `{"taskIds":["`+c+`"]}`)
	wantTask(t, event(br), 3.0, c, "working")
	st.EndSubscriptions()
	wantEnd(t, event(br), 3.0)
	j.finish("c", "C done")
	waitStatus(t, taskServer(j, st, "alice"), c, "completed")

	for _, tc := range []struct {
		accept, body string
		status, code int
	}{
		{sse, listenLine(`4`, `{"taskIds":["x"]}`, meta2026), 400, CodeMissingClientCapability},
		{sse, listenLine(`5`, `7`, meta2026), 200, CodeInvalidParams},
		{"application/json", listenLine(`6`, `{}`, meta2026), 200, CodeInvalidRequest},
	} {
		resp, br := open(context.Background(), "alice", tc.accept, tc.body)
		var out struct{ Error *RPCError }
		if err := json.NewDecoder(br).Decode(&out); err != nil || resp.StatusCode != tc.status || out.Error == nil || out.Error.Code != tc.code {
			t.Errorf("%s: %d %+v %v, want %d %d", tc.body, resp.StatusCode, out.Error, err, tc.status, tc.code)
		}
	}
}

// FuzzListen: whatever the filter, a listen answers with an error and
// nothing else, or with its acknowledgement first, then only task
// notifications, every one tagged with its id, then its result; and it
// never honours a task that is not the caller's.
func FuzzListen(f *testing.F) {
	f.Add(`{"toolsListChanged":true}`, true)
	f.Add(`{"taskIds":["T","T","x"]}`, true)
	f.Add(`{"taskIds":["O","T"]}`, true)
	f.Add(`{"taskIds":["T"]}`, false)
	f.Add(`{"taskIds":"T"}`, true)
	f.Add(`{"taskIds":[1,2]}`, true)
	f.Add(`[]`, true)
	f.Add(`{"taskIds":null,"resourceSubscriptions":["file:///x"]}`, true)
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: -1})
	f.Cleanup(func() { st.Close() })
	s := taskServer(j, st, "me")
	mine := startTask(f, s, "f1", "")
	theirs := startTask(f, taskServer(j, st, "them"), "f2", "")
	j.finish("f1", "done")
	waitStatus(f, s, mine, "completed")
	f.Fuzz(func(t *testing.T, filter string, declare bool) {
		filter = strings.ReplaceAll(filter, `"T"`, `"`+mine+`"`)
		filter = strings.ReplaceAll(filter, `"O"`, `"`+theirs+`"`)
		meta := meta2026
		if declare {
			meta = declareTasks
		}
		m, err := DecodeMessage([]byte(`{"jsonrpc":"2.0","id":"s","method":"subscriptions/listen","params":{"notifications":` + filter + `,` + meta + `}}`))
		if err != nil {
			return // not JSON: no request
		}
		var sent [][]byte
		resp := s.Handle(withNotifier(context.Background(), notifyFunc(func(b []byte) { sent = append(sent, b) })), m)
		var r struct {
			ID     json.RawMessage
			Result map[string]any
			Error  *RPCError
		}
		if err := json.Unmarshal(resp, &r); err != nil || string(r.ID) != `"s"` {
			t.Fatalf("response %s: %v", resp, err)
		}
		if r.Error != nil {
			if len(sent) > 0 {
				t.Fatalf("an error after notifications: %s", sent)
			}
			return
		}
		if len(sent) == 0 {
			t.Fatal("no acknowledgement")
		}
		for i, b := range sent {
			var n map[string]any
			if err := json.Unmarshal(b, &n); err != nil {
				t.Fatalf("notification %s: %v", b, err)
			}
			if subscriptionID(n) != "s" || (i == 0) != (n["method"] == "notifications/subscriptions/acknowledged") ||
				i > 0 && n["method"] != "notifications/tasks" {
				t.Fatalf("notification %d: %s", i, b)
			}
			if strings.Contains(string(b), theirs) {
				t.Fatalf("another owner's task honoured: %s", b)
			}
		}
		if r.Result["resultType"] != "complete" {
			t.Fatalf("result %v", r.Result)
		}
	})
}
