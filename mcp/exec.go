package mcp

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
)

// ExecResult is what running a command produced.
type ExecResult struct {
	Stdout, Stderr []byte
	// ExitCode is the exit status; negative when a signal killed the
	// command.
	ExitCode int
}

// ExecFunc runs command in the workspace with env merged over its
// environment. A command that ran returns its result whatever its exit
// status; err is for a command that could not run (blocked, no shell,
// cancelled before it started …) and its text is shown to the client.
type ExecFunc func(ctx context.Context, command string, env map[string]string) (ExecResult, error)

var execTool = Tool{
	Name:        "exec",
	Title:       "Execute Command",
	Description: "Runs a shell command in the workspace root and returns its standard output. Not available for memory backends.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"command":{"type":"string","description":"The shell command line"},` +
		`"env":{"type":"object","additionalProperties":{"type":"string"},"description":"Extra environment variables for this command"}},` +
		`"required":["command"]}`),
	Annotations: &ToolAnnotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(true), IdempotentHint: ptr(false), OpenWorldHint: ptr(true)},
}

// newExecTool returns the exec tool of the TypeScript agent-backend daemon,
// served by run. Its results match the reference: the trimmed standard
// output on success; "Command execution failed with exit code N: <stderr or
// stdout, trimmed>" (N is "null" for a signal) on failure; "Command cannot
// be empty" for a blank command. Cancelling the request cancels ctx, which
// run must honour by killing the command.
func newExecTool(run ExecFunc) (Tool, ToolHandler) {
	return execTool, func(ctx context.Context, raw json.RawMessage) (*CallToolResult, error) {
		return serveExec(ctx, run, raw)
	}
}

func serveExec(ctx context.Context, run ExecFunc, raw json.RawMessage) (*CallToolResult, error) {
	a := decodeArgs("exec", raw)
	command := a.str("command", true)
	env := a.env("env")
	if err := a.err(); err != nil {
		return errResult(err)
	}
	if strings.TrimSpace(command) == "" {
		return ErrorResult("Command cannot be empty"), nil
	}
	res, err := run(ctx, command, env)
	if err != nil {
		return ErrorResult(err.Error()), nil
	}
	if res.ExitCode != 0 {
		code := strconv.Itoa(res.ExitCode)
		if res.ExitCode < 0 {
			code = "null"
		}
		msg := jsTrim(decodeUTF8(res.Stderr))
		if msg == "" {
			msg = jsTrim(decodeUTF8(res.Stdout))
		}
		return ErrorResult("Command execution failed with exit code " + code + ": " + msg), nil
	}
	return &CallToolResult{Content: []Content{{Type: "text", Text: jsTrim(decodeUTF8(res.Stdout))}}}, nil
}
