package fstools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"

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
