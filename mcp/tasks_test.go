package mcp

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// jobs is the test tool "job": each call, named by its "id" argument,
// writes its "output" to ToolCall.Output and then waits until the test
// finishes it (finish) or its context ends.
type jobs struct {
	mu      sync.Mutex
	release map[string]chan string
	started map[string]chan struct{}
	causes  map[string]error
}

func newJobs() *jobs {
	return &jobs{release: map[string]chan string{}, started: map[string]chan struct{}{}, causes: map[string]error{}}
}

func (j *jobs) chans(id string) (chan string, chan struct{}) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.release[id] == nil {
		j.release[id] = make(chan string, 1)
		j.started[id] = make(chan struct{})
	}
	return j.release[id], j.started[id]
}

// finish makes job id return text.
func (j *jobs) finish(id, text string) {
	rel, _ := j.chans(id)
	rel <- text
}

func (j *jobs) waitStarted(t *testing.T, id string) {
	t.Helper()
	_, st := j.chans(id)
	select {
	case <-st:
	case <-time.After(10 * time.Second):
		t.Fatalf("job %s did not start", id)
	}
}

func (j *jobs) cause(id string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.causes[id]
}

func (j *jobs) run(ctx context.Context, c ToolCall) (*CallToolResult, error) {
	var a struct{ ID, Output string }
	json.Unmarshal(c.Arguments, &a)
	rel, st := j.chans(a.ID)
	if c.Output != nil && a.Output != "" {
		c.Output.Write([]byte(a.Output))
	}
	close(st)
	select {
	case text := <-rel:
		if text == "!error" {
			return ErrorResult("the job failed"), nil
		}
		return TextResult(text), nil
	case <-ctx.Done():
		j.mu.Lock()
		j.causes[a.ID] = context.Cause(ctx)
		j.mu.Unlock()
		return ErrorResult("stopped: " + ctx.Err().Error()), nil
	}
}

var jobTools = NewToolSet(
	Tool{Name: "job", InputSchema: json.RawMessage(`{"type":"object"}`), LongRunning: true},
	Tool{Name: "quick", InputSchema: json.RawMessage(`{"type":"object"}`)},
)

// taskServer returns a Server of jobTools keeping its tasks in st under
// owner.
func taskServer(j *jobs, st *TaskStore, owner string) *Server {
	return NewServer(Implementation{Name: "t", Version: "1"}, ServerOptions{Tasks: st, TaskOwner: owner}, jobTools,
		func(ctx context.Context, c ToolCall) (*CallToolResult, error) {
			if c.Name == "quick" {
				return TextResult("quick"), nil
			}
			return j.run(ctx, c)
		})
}

const declareTasks = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// rpc sends one request to s and decodes the response.
func rpc(t testing.TB, s *Server, method, params string) (result map[string]any, rpcErr *RPCError) {
	t.Helper()
	out := s.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":`+params+`}`))
	var resp struct {
		ID     json.RawMessage
		Result map[string]any
		Error  *RPCError
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("%s: response is not JSON: %v\n%s", method, err, out)
	}
	if string(resp.ID) != "7" {
		t.Fatalf("%s: id %s", method, resp.ID)
	}
	return resp.Result, resp.Error
}

// startTask calls job id as a task and returns its taskId.
func startTask(t testing.TB, s *Server, id, output string) string {
	t.Helper()
	res, e := rpc(t, s, "tools/call", `{"name":"job","arguments":{"id":"`+id+`","output":`+jsonString(output)+`},`+declareTasks+`}`)
	if e != nil || res["resultType"] != "task" || res["status"] != "working" {
		t.Fatalf("tools/call: %+v %v", res, e)
	}
	return res["taskId"].(string)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func getTask(t testing.TB, s *Server, id string) map[string]any {
	t.Helper()
	res, e := rpc(t, s, "tasks/get", `{"taskId":"`+id+`",`+declareTasks+`}`)
	if e != nil {
		t.Fatalf("tasks/get: %v", e)
	}
	if res["resultType"] != "complete" || res["taskId"] != id {
		t.Fatalf("tasks/get: %+v", res)
	}
	return res
}

// waitStatus polls tasks/get until the task has status.
func waitStatus(t testing.TB, s *Server, id, status string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := getTask(t, s, id)
		if res["status"] == status {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: status %v, want %s: %+v", id, res["status"], status, res)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTaskLifecycle(t *testing.T) {
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: -1})
	defer st.Close()
	s := taskServer(j, st, "a")

	id := startTask(t, s, "1", "first line\nsecond")
	if b, err := hex.DecodeString(id); err != nil || len(b) != 16 {
		t.Fatalf("task id %q is not 128 bits in hex", id)
	}
	j.waitStarted(t, "1")
	res := getTask(t, s, id)
	if res["status"] != "working" || res["result"] != nil {
		t.Fatalf("working: %+v", res)
	}
	msg, _ := res["statusMessage"].(string)
	if !strings.Contains(msg, "17 bytes of output so far") || !strings.HasSuffix(msg, ":\nfirst line\nsecond") {
		t.Fatalf("statusMessage %q", msg)
	}
	for _, k := range []string{"createdAt", "lastUpdatedAt"} {
		if _, err := time.Parse(time.RFC3339Nano, res[k].(string)); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	if res["ttlMs"].(float64) != float64((DefaultTaskMaxRuntime+DefaultTaskTTL).Milliseconds()) || res["pollIntervalMs"].(float64) != 500 {
		t.Fatalf("ttl/poll: %+v", res)
	}

	// tasks/update: acknowledged (nothing is outstanding).
	if ack, e := rpc(t, s, "tasks/update", `{"taskId":"`+id+`","inputResponses":{"x":{}},`+declareTasks+`}`); e != nil || len(ack) != 1 || ack["resultType"] != "complete" {
		t.Fatalf("tasks/update: %+v %v", ack, e)
	}

	j.finish("1", "all done")
	res = waitStatus(t, s, id, "completed")
	// The result is exactly what tools/call answers without a task.
	j2 := newJobs()
	plain := taskServer(j2, nil, "a")
	go j2.finish("2", "all done")
	want, _ := rpc(t, plain, "tools/call", `{"name":"job","arguments":{"id":"2"}}`)
	gotJSON, _ := json.Marshal(res["result"])
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Fatalf("result %s, want %s", gotJSON, wantJSON)
	}
	if _, ok := res["statusMessage"]; ok {
		t.Fatalf("completed task has a statusMessage: %+v", res)
	}

	// Cancelling a finished task is acknowledged and changes nothing.
	if ack, e := rpc(t, s, "tasks/cancel", `{"taskId":"`+id+`",`+declareTasks+`}`); e != nil || ack["resultType"] != "complete" {
		t.Fatalf("tasks/cancel of a finished task: %+v %v", ack, e)
	}
	if res := getTask(t, s, id); res["status"] != "completed" {
		t.Fatalf("after cancel: %+v", res)
	}
}

// A tool error ends the task completed, with the isError result: failed
// is for JSON-RPC errors only.
func TestTaskToolErrorIsCompleted(t *testing.T) {
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: -1})
	defer st.Close()
	s := taskServer(j, st, "a")
	id := startTask(t, s, "e", "")
	j.finish("e", "!error")
	res := waitStatus(t, s, id, "completed")
	r := res["result"].(map[string]any)
	if r["isError"] != true || !strings.Contains(fmt.Sprint(r["content"]), "the job failed") {
		t.Fatalf("result %+v", r)
	}
}

func TestTaskCancel(t *testing.T) {
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: -1})
	defer st.Close()
	s := taskServer(j, st, "a")
	id := startTask(t, s, "c", "")
	j.waitStarted(t, "c")
	for range 2 { // idempotent
		if ack, e := rpc(t, s, "tasks/cancel", `{"taskId":"`+id+`",`+declareTasks+`}`); e != nil || len(ack) != 1 || ack["resultType"] != "complete" {
			t.Fatalf("tasks/cancel: %+v %v", ack, e)
		}
	}
	res := waitStatus(t, s, id, "cancelled")
	if res["result"] != nil || res["statusMessage"] != taskCancelledByClientText {
		t.Fatalf("cancelled: %+v", res)
	}
	if c := j.cause("c"); c != errTaskCancelled {
		t.Fatalf("tool's context cause %v", c)
	}
	if ack, e := rpc(t, s, "tasks/cancel", `{"taskId":"`+id+`",`+declareTasks+`}`); e != nil || ack["resultType"] != "complete" {
		t.Fatalf("tasks/cancel of a cancelled task: %+v %v", ack, e)
	}
}

func TestTaskMethodErrors(t *testing.T) {
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: -1})
	defer st.Close()
	s := taskServer(j, st, "a")
	id := startTask(t, s, "x", "")
	defer j.finish("x", "")
	other := taskServer(j, st, "b")
	unknown := strings.Repeat("0", 32)
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		// A request that does not declare the extension: -32021, even for
		// a task that exists.
		for _, params := range []string{`{"taskId":"` + id + `"}`,
			`{"taskId":"` + id + `","_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`,
			`{"taskId":"` + id + `","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/other":{}}}}}`} {
			_, e := rpc(t, s, method, params)
			if e == nil || e.Code != -32021 || string(e.Data) != `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}` {
				t.Fatalf("%s %s: %+v", method, params, e)
			}
		}
		for _, c := range []struct {
			s      *Server
			params string
			msg    string
		}{
			{s, `{"taskId":"` + unknown + `",` + declareTasks + `}`, "Failed to retrieve task: Task not found"},
			{s, `{"taskId":"",` + declareTasks + `}`, "Failed to retrieve task: Task not found"},
			// Another owner's task is unknown here.
			{other, `{"taskId":"` + id + `",` + declareTasks + `}`, "Failed to retrieve task: Task not found"},
			{s, `{` + declareTasks + `}`, "Invalid params: taskId must be a string"},
			{s, `{"taskId":7,` + declareTasks + `}`, "Invalid params: taskId must be a string"},
		} {
			_, e := rpc(t, c.s, method, c.params)
			if e == nil || e.Code != CodeInvalidParams || e.Message != c.msg {
				t.Fatalf("%s %s: %+v, want -32602 %q", method, c.params, e, c.msg)
			}
		}
	}
	// The other owner's cancel did not reach the task.
	if res := getTask(t, s, id); res["status"] != "working" {
		t.Fatalf("%+v", res)
	}
	// A server keeping no tasks does not know the methods.
	if _, e := rpc(t, taskServer(j, nil, "a"), "tasks/get", `{"taskId":"`+id+`",`+declareTasks+`}`); e == nil || e.Code != CodeMethodNotFound {
		t.Fatalf("no store: %+v", e)
	}
}

// Which calls become tasks: a LongRunning tool, a request declaring the
// extension, a server with a store, a call outlasting After.
func TestTaskEligibility(t *testing.T) {
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: time.Hour})
	defer st.Close()
	s := taskServer(j, st, "a")
	// Finishing within After: the result itself.
	go j.finish("fast", "fast result")
	res, e := rpc(t, s, "tools/call", `{"name":"job","arguments":{"id":"fast"},`+declareTasks+`}`)
	if e != nil || res["resultType"] != "complete" || res["content"] == nil {
		t.Fatalf("fast call: %+v %v", res, e)
	}
	// Not LongRunning: never a task.
	st2 := NewTaskStore(TaskOptions{After: -1})
	defer st2.Close()
	s2 := taskServer(j, st2, "a")
	if res, e := rpc(t, s2, "tools/call", `{"name":"quick",`+declareTasks+`}`); e != nil || res["resultType"] != "complete" {
		t.Fatalf("quick: %+v %v", res, e)
	}
	// Not declared: the plain result, however long it takes.
	go j.finish("undeclared", "r")
	if res, e := rpc(t, s2, "tools/call", `{"name":"job","arguments":{"id":"undeclared"},"_meta":{"progressToken":1}}`); e != nil || res["resultType"] != nil {
		t.Fatalf("undeclared: %+v %v", res, e)
	}
	st.mu.Lock()
	n := len(st.tasks)
	st.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d tasks kept for calls answered directly", n)
	}
}

// A client that leaves before its task is announced takes the task with
// it: nobody could poll or cancel it.
func TestTaskRequestGoneBeforeAnnounced(t *testing.T) {
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: time.Hour})
	defer st.Close()
	s := taskServer(j, st, "a")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []byte)
	go func() {
		done <- s.HandleBytes(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"job","arguments":{"id":"g"},`+declareTasks+`}}`))
	}()
	j.waitStarted(t, "g")
	cancel()
	if out := <-done; out != nil {
		t.Fatalf("answered: %s", out)
	}
	if c := j.cause("g"); c != errRequestGone {
		t.Fatalf("cause %v", c)
	}
	st.mu.Lock()
	n := len(st.tasks)
	st.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d tasks kept", n)
	}
}

func TestTaskStoreBounds(t *testing.T) {
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: -1, MaxPerOwner: 2, MaxTotal: 3})
	defer st.Close()
	a, b := taskServer(j, st, "a"), taskServer(j, st, "b")
	a1 := startTask(t, a, "a1", "")
	startTask(t, a, "a2", "")
	defer j.finish("a2", "")
	refused := func(s *Server, id, limit string) {
		t.Helper()
		res, e := rpc(t, s, "tools/call", `{"name":"job","arguments":{"id":"`+id+`"},`+declareTasks+`}`)
		if e != nil || res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "Too many running tasks: at most "+limit) {
			t.Fatalf("call over the bound: %+v %v", res, e)
		}
	}
	refused(a, "a3", "2") // both of a's are running
	startTask(t, b, "b1", "")
	defer j.finish("b1", "")
	refused(b, "b2", "3") // 3 in all
	// A finished task makes room: the oldest finished one is dropped.
	j.finish("a1", "done")
	waitStatus(t, a, a1, "completed")
	startTask(t, a, "a4", "")
	defer j.finish("a4", "")
	if _, e := rpc(t, a, "tasks/get", `{"taskId":"`+a1+`",`+declareTasks+`}`); e == nil || e.Code != CodeInvalidParams {
		t.Fatalf("evicted task still there: %v", e)
	}
}

// The owner "" (a stdio server's) is bounded like any other: a finished
// task of another owner does not make room for it.
func TestTaskStoreBoundsEmptyOwner(t *testing.T) {
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: -1, MaxPerOwner: 1})
	defer st.Close()
	other, empty := taskServer(j, st, "other"), taskServer(j, st, "")
	done := startTask(t, other, "o", "")
	j.finish("o", "")
	waitStatus(t, other, done, "completed")
	startTask(t, empty, "e1", "")
	defer j.finish("e1", "")
	res, _ := rpc(t, empty, "tools/call", `{"name":"job","arguments":{"id":"e2"},`+declareTasks+`}`)
	if res["isError"] != true {
		t.Fatalf("a second task for the owner \"\": %+v", res)
	}
	getTask(t, other, done) // still kept
}

func TestTaskStoreTTLAndResultBytes(t *testing.T) {
	j := newJobs()
	var now atomic.Int64
	now.Store(time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC).UnixNano())
	st := NewTaskStore(TaskOptions{After: -1, TTL: time.Minute, ResultBytes: 500}) // one result of 150 bytes (twice) fits, not two
	st.now = func() time.Time { return time.Unix(0, now.Load()) }
	defer st.Close()
	s := taskServer(j, st, "a")
	id := startTask(t, s, "t", "")
	now.Add(int64(10 * time.Second))
	j.finish("t", "x")
	res := waitStatus(t, s, id, "completed")
	if res["ttlMs"].(float64) != 70000 || res["createdAt"] != "2026-07-28T12:00:00.000Z" || res["lastUpdatedAt"] != "2026-07-28T12:00:10.000Z" {
		t.Fatalf("%+v", res)
	}
	now.Add(int64(59 * time.Second))
	getTask(t, s, id)
	now.Add(int64(time.Second))
	if _, e := rpc(t, s, "tasks/get", `{"taskId":"`+id+`",`+declareTasks+`}`); e == nil || e.Code != CodeInvalidParams {
		t.Fatalf("expired task: %v", e)
	}
	// Results over ResultBytes: the oldest finished go first.
	first := startTask(t, s, "r1", "")
	j.finish("r1", strings.Repeat("a", 150))
	waitStatus(t, s, first, "completed")
	now.Add(int64(time.Second))
	second := startTask(t, s, "r2", "")
	j.finish("r2", strings.Repeat("b", 150))
	waitStatus(t, s, second, "completed")
	if _, e := rpc(t, s, "tasks/get", `{"taskId":"`+first+`",`+declareTasks+`}`); e == nil || e.Code != CodeInvalidParams {
		t.Fatalf("oldest result kept over ResultBytes: %v", e)
	}
}

func TestTaskMaxRuntime(t *testing.T) {
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: -1, MaxRuntime: 50 * time.Millisecond})
	defer st.Close()
	s := taskServer(j, st, "a")
	id := startTask(t, s, "m", "")
	res := waitStatus(t, s, id, "completed")
	if res["statusMessage"] != "Stopped after the maximum run time of 50ms" || !strings.Contains(fmt.Sprint(res["result"]), "stopped: context deadline exceeded") {
		t.Fatalf("%+v", res)
	}
	if c := j.cause("m"); c != errTaskRuntime {
		t.Fatalf("cause %v", c)
	}
}

func TestTaskStoreClose(t *testing.T) {
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: -1})
	s := taskServer(j, st, "a")
	id := startTask(t, s, "z", "")
	j.waitStarted(t, "z")
	st.Close()
	if c := j.cause("z"); c != errStoreClosed {
		t.Fatalf("cause %v", c)
	}
	res := getTask(t, s, id)
	if res["status"] != "failed" || fmt.Sprint(res["error"]) != "map[code:-32603 message:The server shut down before the task finished]" {
		t.Fatalf("%+v", res)
	}
	res, _ = rpc(t, s, "tools/call", `{"name":"job","arguments":{"id":"late"},`+declareTasks+`}`)
	if res["isError"] != true {
		t.Fatalf("task started on a closed store: %+v", res)
	}
}

// A store shutting down while a call has not been announced as a task
// yet: the call gets an internal error, not an empty result.
func TestTaskStoreClosedBeforeAnnounced(t *testing.T) {
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: time.Hour})
	s := taskServer(j, st, "a")
	done := make(chan struct{})
	var res map[string]any
	var e *RPCError
	go func() {
		defer close(done)
		res, e = rpc(t, s, "tools/call", `{"name":"job","arguments":{"id":"s"},`+declareTasks+`}`)
	}()
	j.waitStarted(t, "s")
	st.Close()
	<-done
	if e == nil || e.Code != CodeInternalError || e.Message != "Internal error: The server shut down before the task finished" {
		t.Fatalf("%+v %+v", res, e)
	}
}

func TestTailBuffer(t *testing.T) {
	b := tailBuffer{max: 8}
	for _, w := range []string{"abc", "defgh", "ijklmnopqrstu", "v", "wxyz"} {
		b.write([]byte(w))
	}
	if got := b.tail(); got != "stuvwxyz" {
		t.Fatalf("tail %q", got)
	}
	b = tailBuffer{max: 4}
	b.write([]byte("aé\xffxy")) // é is 2 bytes: the last 4 are "\xa9\xffxy"
	if got := b.tail(); got != "\uFFFDxy" {
		t.Fatalf("tail %q", got)
	}
}

func TestTaskIDsUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		id, err := newTaskID()
		if err != nil || len(id) != 32 || seen[id] {
			t.Fatalf("id %q %v", id, err)
		}
		seen[id] = true
	}
}

// A task outlives the HTTP request that started it, and what the server
// factory made for that request is released only once the task is done.
func TestTaskOutlivesHTTPRequest(t *testing.T) {
	j := newJobs()
	st := NewTaskStore(TaskOptions{After: -1})
	defer st.Close()
	var startReleased atomic.Bool
	h := NewHTTPHandler(func(r *http.Request) (*Server, func(), error) {
		release := func() {}
		if r.Header.Get("X-Test") == "start" {
			release = func() { startReleased.Store(true) }
		}
		return taskServer(j, st, "a"), release, nil
	}, HTTPOptions{})
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(tag, body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Test", tag)
		// The standard headers of a 2026-07-28 request.
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name   string `json:"name"`
				TaskID string `json:"taskId"`
			} `json:"params"`
		}
		json.Unmarshal([]byte(body), &msg)
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", msg.Method)
		if n := msg.Params.Name + msg.Params.TaskID; n != "" {
			req.Header.Set("Mcp-Name", n)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Result map[string]any }
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%v %s", err, resp.Header.Get("Content-Type"))
		}
		return out.Result
	}
	res := post("start", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"job","arguments":{"id":"h"},`+declareTasks+`}}`)
	id, _ := res["taskId"].(string)
	if id == "" {
		t.Fatalf("%+v", res)
	}
	j.waitStarted(t, "h")
	get := `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"` + id + `",` + declareTasks + `}}`
	if res = post("get", get); res["status"] != "working" {
		t.Fatalf("%+v", res)
	}
	if startReleased.Load() {
		t.Fatal("the starting request's resources were released while its task runs")
	}
	j.finish("h", "ok")
	deadline := time.Now().Add(10 * time.Second)
	for !startReleased.Load() || res["status"] != "completed" {
		if time.Now().After(deadline) {
			t.Fatalf("released %v, task %+v", startReleased.Load(), res)
		}
		time.Sleep(5 * time.Millisecond)
		res = post("get", get)
	}
}

// TestDiscoverAdvertisesTasks: a server with a task store advertises the
// tasks extension in server/discover, one without does not.
func TestDiscoverAdvertisesTasks(t *testing.T) {
	st := NewTaskStore(TaskOptions{})
	defer st.Close()
	for _, tc := range []struct {
		store *TaskStore
		want  bool
	}{{st, true}, {nil, false}} {
		res, rpcErr := rpc(t, taskServer(newJobs(), tc.store, ""), "server/discover", `{`+declareTasks+`}`)
		if rpcErr != nil {
			t.Fatal(rpcErr)
		}
		caps, _ := res["capabilities"].(map[string]any)
		ext, _ := caps["extensions"].(map[string]any)
		_, got := ext[TasksExtension]
		if got != tc.want || caps["tools"] == nil {
			t.Errorf("store %v: capabilities %v", tc.store != nil, caps)
		}
	}
}
