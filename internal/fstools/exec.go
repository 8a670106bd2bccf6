package fstools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbe/agent-backend/internal/jsonraw"

	"github.com/agentbe/agent-backend/mcp"
)

// ExecResult is what running a command produced.
type ExecResult struct {
	Stdout, Stderr []byte
	// ExitCode is the exit status; negative when a signal killed the
	// command.
	ExitCode int
	// StdoutTotal is how many bytes the command wrote to its standard
	// output when Stdout holds only the first of them (a runner that caps
	// what it collects); zero means len(Stdout).
	StdoutTotal int64
}

// ExecFunc runs command in the workspace with env merged over its
// environment. A command that ran returns its result whatever its exit
// status; err is for a command that could not run (blocked, no shell,
// cancelled before it started …) and its text is shown to the client.
// output, when not nil, is also given the command's standard output and
// standard error as they are produced (the result still holds them); it
// is safe for concurrent use and its writes never fail.
type ExecFunc func(ctx context.Context, command string, env map[string]string, output io.Writer) (ExecResult, error)

var execTool = mcp.Tool{
	Name:  "exec",
	Title: "Execute Command",
	Description: "Runs a shell command in the workspace root and returns its standard output. " +
		"If the command fails, the error result reads \"Command execution failed with exit code N: \" " +
		"followed by its standard error (or its standard output when it wrote no error), then, when it wrote both, " +
		"a blank line, \"stdout:\" and its standard output. " +
		"Output beyond the server's limit (1 MiB by default) is cut, with a note giving its full length: " +
		"redirect large output to a file and read it in parts. Not available for memory backends. " +
		"Long commands (builds, test runs) may outlive a client's request timeout: " +
		"a request with _meta.progressToken gets a notifications/progress every second while the command runs " +
		"(its message counts the output so far), so clients that reset their timeout on progress keep waiting; " +
		"where the server keeps tasks (the agentbe daemon does), a client declaring the io.modelcontextprotocol/tasks extension " +
		"in the request's capabilities gets, " +
		"for a command still running after half a second, a task instead of the result: " +
		"tasks/get reports its status, the last of its output so far and, once done, this tool's result; " +
		"tasks/cancel kills the command's process group.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"command":{"type":"string","description":"The shell command line"},` +
		`"env":{"type":"object","additionalProperties":{"type":"string"},"description":"Extra environment variables for this command"},` +
		`"timeout":{"type":"number","exclusiveMinimum":0,"description":"Seconds after which the command is stopped; it can only shorten the server's own time limit"}},` +
		`"required":["command"]}`),
	Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(true), IdempotentHint: ptr(false), OpenWorldHint: ptr(true)},
	LongRunning: true,
}

// errExecTimeout ends the context of an exec call whose timeout argument
// ran out; maxExecTimeout bounds that argument (a day).
var errExecTimeout = errors.New("exec timeout")

const maxExecTimeout = 24 * time.Hour

// serveExec runs the exec tool of the TypeScript agent-backend daemon
// through run. Its results follow the reference: the trimmed standard
// output on success; "Command execution failed with exit code N: <stderr,
// or stdout when stderr is empty, trimmed>" (N is "null" for a signal) on
// failure, to which we add the standard output as well when the command
// wrote both ("\n\nstdout:\n<stdout, trimmed>"); "Command cannot be empty"
// for a blank command. The text is kept within the exec output limit,
// escaped (Limits.ExecOutputBytes). Cancelling the request cancels ctx,
// which run must honour by killing the command. An optional "timeout"
// (seconds) ends ctx sooner: the command is stopped and the result says
// "LIMIT_EXCEEDED: time limit exceeded", as the backend says of its own
// limits (which a timeout cannot lengthen: both apply).
//
// While the command runs, its output goes to call.Output when set (a task
// shows the last of it), and call.Progress, when set, is called every
// lim.progress with the number of bytes of output so far.
func serveExec(ctx context.Context, run ExecFunc, call mcp.ToolCall, lim resultLimits) (*mcp.CallToolResult, error) {
	a := decodeArgs("exec", call.Arguments)
	command := a.str("command", true)
	env := a.env("env")
	timeout, hasTimeout := a.num("timeout")
	if err := a.err(); err != nil {
		return errResult(err)
	}
	if strings.TrimSpace(command) == "" {
		return mcp.ErrorResult("Command cannot be empty"), nil
	}
	if hasTimeout {
		if !(timeout > 0) || timeout > maxExecTimeout.Seconds() {
			return mcp.ErrorResult("timeout must be a positive number of seconds (at most " +
				strconv.Itoa(int(maxExecTimeout.Seconds())) + ")"), nil
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, time.Duration(timeout*float64(time.Second)), errExecTimeout)
		defer cancel()
	}
	var out *execOutput
	if call.Output != nil || call.Progress != nil {
		out = &execOutput{w: call.Output}
	}
	var stop func()
	if call.Progress != nil {
		stop = heartbeat(lim.progress, func() {
			call.Progress(strconv.FormatInt(out.total(), 10) + " bytes of output so far")
		})
	}
	var res ExecResult
	var err error
	if out != nil {
		res, err = run(ctx, command, env, out)
	} else {
		res, err = run(ctx, command, env, nil)
	}
	if stop != nil {
		stop()
	}
	budget := lim.single()
	if hasTimeout && context.Cause(ctx) == errExecTimeout {
		// The same words as the backend's own time limit.
		return mcp.ErrorResult("LIMIT_EXCEEDED: time limit exceeded (timeout " +
			strconv.FormatFloat(timeout, 'g', -1, 64) + "s); the command was stopped"), nil
	}
	if err != nil {
		msg := err.Error()
		if jsonraw.EscapedLen(msg, budget) > budget {
			msg = clipOutput(msg, int64(len(msg)), budget)
		}
		return mcp.ErrorResult(msg), nil
	}
	stdout := jsTrim(decodeUTF8(res.Stdout))
	total := res.StdoutTotal
	if total == 0 || len(stdout) == 0 {
		total = int64(len(stdout))
	}
	if res.ExitCode == 0 {
		return &mcp.CallToolResult{Content: []mcp.Content{{Type: "text", Text: fitOutput(stdout, total, budget)}}}, nil
	}
	code := strconv.Itoa(res.ExitCode)
	if res.ExitCode < 0 {
		code = "null"
	}
	prefix := "Command execution failed with exit code " + code + ": "
	stderr := jsTrim(decodeUTF8(res.Stderr))
	if stderr == "" {
		return mcp.ErrorResult(prefix + fitOutput(stdout, total, budget-len(prefix))), nil
	}
	if stdout == "" {
		return mcp.ErrorResult(prefix + fitOutput(stderr, int64(len(stderr)), budget-len(prefix))), nil
	}
	// Both streams: each gets half of the budget, and what one leaves
	// unused goes to the other.
	const sep = "\n\nstdout:\n"
	room := budget - len(prefix) - escapedLenExact(sep)
	errLen, outLen := escapedLenExact(stderr), escapedLenExact(stdout)
	errRoom := room / 2
	if outLen < room-errRoom {
		errRoom = room - outLen
	}
	errText := fitOutput(stderr, int64(len(stderr)), min(errRoom, errLen))
	outText := fitOutput(stdout, total, room-escapedLenExact(errText))
	return mcp.ErrorResult(prefix + errText + sep + outText), nil
}

// escapedLenExact is the escaped length of s, always scanned.
func escapedLenExact(s string) int {
	n, _ := jsonraw.ClipEscaped(s, -1)
	return n
}

// fitOutput returns s when its escaped form fits budget and it is all of
// the output (total bytes); else its longest prefix that fits together with
// a note saying how much there was.
func fitOutput(s string, total int64, budget int) string {
	if total <= int64(len(s)) && jsonraw.EscapedLen(s, budget) <= budget {
		return s
	}
	return clipOutput(s, total, budget)
}

// clipOutput cuts s on a rune boundary so that it and the note that it was
// cut fit budget, escaped (a budget smaller than the note gets the note).
func clipOutput(s string, total int64, budget int) string {
	longest := escapedLenExact(truncationNote(total, len(s))) // fewer bytes shown: no longer
	_, cut := jsonraw.ClipEscaped(s, max(budget-longest, 0))
	if cut < 0 {
		cut = len(s)
	}
	return s[:cut] + truncationNote(total, cut)
}

// truncationNote is the reference's note on cut output (it counts UTF-16
// characters; we count bytes).
func truncationNote(total int64, shown int) string {
	return "\n\n... [Output truncated. Full output was " + strconv.FormatInt(total, 10) +
		" bytes, showing first " + strconv.Itoa(shown) + "]"
}

// execOutput counts a running command's output and passes it on to w
// (when set), one write at a time: stdout and stderr arrive from
// different goroutines.
type execOutput struct {
	w  io.Writer
	mu sync.Mutex
	n  int64
}

func (o *execOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n += int64(len(p))
	if o.w != nil {
		o.w.Write(p)
	}
	return len(p), nil
}

func (o *execOutput) total() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}

// heartbeat calls beat every interval until stop is called; once stop
// has returned beat is not running and will not run again.
func heartbeat(interval time.Duration, beat func()) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				beat()
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
