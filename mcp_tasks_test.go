package agentbe

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/mcp"
)

const declareTasksMeta = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// taskRPC sends one request to s and returns its result, failing on a
// JSON-RPC error.
func taskRPC(t *testing.T, s *mcp.Server, method, params string) map[string]any {
	t.Helper()
	out := s.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
	var resp struct {
		Result map[string]any
		Error  *mcp.RPCError
	}
	if err := json.Unmarshal(out, &resp); err != nil || resp.Error != nil {
		t.Fatalf("%s: %v %v\n%s", method, err, resp.Error, out)
	}
	return resp.Result
}

// execTask starts command as an exec task on s and returns its id.
func execTask(t *testing.T, s *mcp.Server, command string) string {
	t.Helper()
	res := taskRPC(t, s, "tools/call", `{"name":"exec","arguments":{"command":`+strconv.Quote(command)+`},`+declareTasksMeta+`}`)
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" {
		t.Fatalf("not a task: %+v", res)
	}
	return id
}

// pollTask polls tasks/get until ok accepts the task.
func pollTask(t *testing.T, s *mcp.Server, id string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := taskRPC(t, s, "tasks/get", `{"taskId":"`+id+`",`+declareTasksMeta+`}`)
		if ok(res) {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: %+v", id, res)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func taskServerOn(t *testing.T, b Backend) *mcp.Server {
	st := mcp.NewTaskStore(mcp.TaskOptions{After: -1})
	t.Cleanup(func() { st.Close() })
	return NewMCPServerWith(b, MCPServerOptions{ServerOptions: mcp.ServerOptions{Tasks: st}})
}

// tasks/cancel kills the command's whole process group: the shell and a
// child it put in the background, both found by their pids.
func TestMCPExecTaskCancelKillsProcessGroup(t *testing.T) {
	s := taskServerOn(t, newTestLocal(t, t.TempDir()))
	id := execTask(t, s, `sleep 60 & echo "child=$! shell=$$"; wait`)
	pids := regexp.MustCompile(`child=(\d+) shell=(\d+)`)
	var m []string
	res := pollTask(t, s, id, func(r map[string]any) bool {
		m = pids.FindStringSubmatch(r["statusMessage"].(string))
		return m != nil
	})
	if res["status"] != "working" {
		t.Fatalf("%+v", res)
	}
	child, _ := strconv.Atoi(m[1])
	shell, _ := strconv.Atoi(m[2])
	for _, pid := range []int{child, shell} {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("process %d not running before the cancel: %v", pid, err)
		}
	}
	ack := taskRPC(t, s, "tasks/cancel", `{"taskId":"`+id+`",`+declareTasksMeta+`}`)
	if len(ack) != 1 || ack["resultType"] != "complete" {
		t.Fatalf("ack %+v", ack)
	}
	pollTask(t, s, id, func(r map[string]any) bool { return r["status"] == "cancelled" })
	waitGone(t, child)
	waitGone(t, shell)
}

// A task's result is what tools/call answers without one: output and
// errors collected while they stream to the task, the cut of long output.
func TestMCPExecTaskResultAsToolsCall(t *testing.T) {
	l := newTestLocal(t, t.TempDir())
	s := taskServerOn(t, l)
	plain := NewMCPServer(l)
	for _, cmd := range []string{
		`echo out; echo err >&2; exit 3`,
		`echo only-out; exit 1`,
		`printf '  hello  \n'`,
		`head -c 3000000 /dev/zero | tr '\0' a`,
		`head -c 300000 /dev/zero | tr '\0' e >&2; echo o; exit 2`,
	} {
		id := execTask(t, s, cmd)
		res := pollTask(t, s, id, func(r map[string]any) bool { return r["status"] != "working" })
		want := taskRPC(t, plain, "tools/call", `{"name":"exec","arguments":{"command":`+strconv.Quote(cmd)+`}}`)
		got, _ := json.Marshal(res["result"])
		w, _ := json.Marshal(want)
		if res["status"] != "completed" || string(got) != string(w) {
			t.Fatalf("%s: %v\ngot  %.300s\nwant %.300s", cmd, res["status"], got, w)
		}
		if strings.HasPrefix(cmd, "head -c 3000000") && !strings.Contains(string(got), "Full output was 3000000 bytes") {
			t.Fatalf("%s: %.300s", cmd, got)
		}
	}
}
