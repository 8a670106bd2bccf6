package fstools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/mcp"
)

func TestExecTool(t *testing.T) {
	var gotEnv map[string]string
	tool, h := newExecTool(func(ctx context.Context, command string, env map[string]string, _ io.Writer) (ExecResult, error) {
		gotEnv = env
		switch command {
		case "ok":
			return ExecResult{Stdout: []byte("  hello\n\n"), Stderr: []byte("noise")}, nil
		case "fail":
			return ExecResult{Stdout: []byte("out\n"), Stderr: []byte(" bad thing \n"), ExitCode: 2}, nil
		case "fail-quiet":
			return ExecResult{Stdout: []byte("only stdout\n"), ExitCode: 1}, nil
		case "killed":
			return ExecResult{ExitCode: -1}, nil
		}
		return ExecResult{}, errors.New("blocked: " + command)
	}, Limits{})
	if tool.Name != "exec" {
		t.Fatalf("name %q", tool.Name)
	}
	var schema struct {
		Properties map[string]struct{ Type string } `json:"properties"`
		Required   []string                         `json:"required"`
	}
	if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || schema.Properties["command"].Type != "string" ||
		schema.Properties["env"].Type != "object" || len(schema.Required) != 1 || schema.Required[0] != "command" {
		t.Fatalf("schema %s", tool.InputSchema)
	}
	cases := []struct {
		args    string
		want    string
		isError bool
	}{
		{`{"command":"ok","env":{"A":"1"}}`, "hello", false},
		{`{"command":"fail"}`, "Command execution failed with exit code 2: bad thing\n\nstdout:\nout", true},
		{`{"command":"fail-quiet"}`, "Command execution failed with exit code 1: only stdout", true},
		{`{"command":"killed"}`, "Command execution failed with exit code null: ", true},
		{`{"command":"rm -rf /"}`, "blocked: rm -rf /", true},
		{`{"command":"  "}`, "Command cannot be empty", true},
		{`{}`, "MCP error -32602: Input validation error: Invalid arguments for tool exec: Invalid input: expected string, received undefined at command", true},
		{`{"command":"ok","env":{"A":1}}`, "MCP error -32602: Input validation error: Invalid arguments for tool exec: Invalid input: expected string, received number at env.A", true},
	}
	for _, c := range cases {
		res, err := h(context.Background(), json.RawMessage(c.args))
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError != c.isError || res.Content[0].Text != c.want {
			t.Errorf("%s: got %q (error %v), want %q", c.args, res.Content[0].Text, res.IsError, c.want)
		}
	}
	h(context.Background(), json.RawMessage(`{"command":"ok","env":{"A":"1"}}`))
	if gotEnv["A"] != "1" {
		t.Errorf("env not passed: %v", gotEnv)
	}
}

// newExecTool returns the exec tool served by run within lim, as one
// function.
func newExecTool(run ExecFunc, lim Limits) (mcp.Tool, toolFunc) {
	return execTool, func(ctx context.Context, raw json.RawMessage) (*mcp.CallToolResult, error) {
		return serveExec(ctx, run, mcp.ToolCall{Name: "exec", Arguments: raw}, lim.effective())
	}
}

// While a command runs, exec passes its output on (ToolCall.Output) and
// reports progress every Limits.ProgressInterval (ToolCall.Progress) with
// the bytes of output so far; nothing is reported once it has returned.
func TestExecProgressAndOutput(t *testing.T) {
	var (
		mu       sync.Mutex
		messages []string
	)
	twoBeats := make(chan struct{})
	progress := func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		messages = append(messages, msg)
		if len(messages) == 2 {
			close(twoBeats)
		}
	}
	var watched strings.Builder
	run := func(ctx context.Context, command string, env map[string]string, out io.Writer) (ExecResult, error) {
		if out == nil {
			return ExecResult{}, errors.New("no output writer")
		}
		out.Write([]byte("hello"))
		out.Write([]byte(" world"))
		<-twoBeats
		return ExecResult{Stdout: []byte("hello world")}, nil
	}
	// The tool's description tells clients how to keep a long command
	// alive.
	for _, s := range []string{"_meta.progressToken", "notifications/progress", "io.modelcontextprotocol/tasks", "tasks/get", "tasks/cancel"} {
		if !strings.Contains(execTool.Description, s) {
			t.Errorf("exec's description does not mention %s", s)
		}
	}
	if !execTool.LongRunning {
		t.Error("exec is not LongRunning")
	}
	lim := Limits{ProgressInterval: time.Millisecond}.effective()
	res, err := serveExec(context.Background(), run, mcp.ToolCall{Name: "exec", Arguments: json.RawMessage(`{"command":"x"}`),
		Progress: progress, Output: &watched}, lim)
	if err != nil || res.IsError || res.Content[0].Text != "hello world" {
		t.Fatalf("%+v %v", res, err)
	}
	mu.Lock()
	n := len(messages)
	got := append([]string(nil), messages...)
	mu.Unlock()
	if got[0] != "11 bytes of output so far" || watched.String() != "hello world" {
		t.Fatalf("progress %q, output %q", got, watched.String())
	}
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(messages) != n {
		t.Fatalf("progress after exec returned: %q", messages[n:])
	}

	// Without Progress or Output, run gets no writer (the backend's fast
	// path collects the output itself).
	var gotOut io.Writer = &watched
	serveExec(context.Background(), func(ctx context.Context, command string, env map[string]string, out io.Writer) (ExecResult, error) {
		gotOut = out
		return ExecResult{}, nil
	}, mcp.ToolCall{Name: "exec", Arguments: json.RawMessage(`{"command":"x"}`)}, lim)
	if gotOut != nil {
		t.Fatalf("writer %T without a watcher", gotOut)
	}
}

// TestExecToolTimeout: the optional timeout ends the command's context
// (the runner kills it) and the result names the time limit; a runner's
// own LIMIT_EXCEEDED error is passed on as it is.
func TestExecToolTimeout(t *testing.T) {
	var deadline time.Duration
	tool, h := newExecTool(func(ctx context.Context, command string, env map[string]string) (ExecResult, error) {
		if d, ok := ctx.Deadline(); ok {
			deadline = time.Until(d)
		}
		switch command {
		case "sleep":
			<-ctx.Done()
			return ExecResult{}, ctx.Err()
		case "oom":
			return ExecResult{}, errors.New("agentbe: exec: LIMIT_EXCEEDED: memory limit exceeded (64 MiB per command); the command was stopped")
		}
		return ExecResult{Stdout: []byte("done")}, nil
	}, Limits{})
	var schema struct {
		Properties map[string]struct{ Type string } `json:"properties"`
	}
	if json.Unmarshal(tool.InputSchema, &schema); schema.Properties["timeout"].Type != "number" {
		t.Fatalf("schema %s", tool.InputSchema)
	}
	cases := []struct {
		args    string
		want    string
		isError bool
	}{
		{`{"command":"sleep","timeout":0.05}`, "LIMIT_EXCEEDED: time limit exceeded (timeout 0.05s); the command was stopped", true},
		{`{"command":"oom","timeout":10}`, "agentbe: exec: LIMIT_EXCEEDED: memory limit exceeded (64 MiB per command); the command was stopped", true},
		{`{"command":"quick","timeout":30}`, "done", false},
		{`{"command":"quick","timeout":0}`, "timeout must be a positive number of seconds (at most 86400)", true},
		{`{"command":"quick","timeout":-1}`, "timeout must be a positive number of seconds (at most 86400)", true},
		{`{"command":"quick","timeout":1e9}`, "timeout must be a positive number of seconds (at most 86400)", true},
		{`{"command":"quick","timeout":"5"}`, "MCP error -32602: Input validation error: Invalid arguments for tool exec: Invalid input: expected number, received string at timeout", true},
	}
	for _, c := range cases {
		res, err := h(context.Background(), json.RawMessage(c.args))
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError != c.isError || res.Content[0].Text != c.want {
			t.Errorf("%s: got %q (error %v), want %q", c.args, res.Content[0].Text, res.IsError, c.want)
		}
	}
	if deadline <= 0 || deadline > 30*time.Second {
		t.Fatalf("the timeout did not reach the runner's context: %v", deadline)
	}
}
