package fstools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentbe/agent-backend/internal/jsonraw"
	"github.com/agentbe/agent-backend/mcp"
)

// Processes is what the process tools run on: the backend's background
// processes, seen from one scope.
type Processes interface {
	// StartProcess starts a shell command line in the background.
	StartProcess(ctx context.Context, command string, opts ProcessStart) (ProcessState, error)
	// ReadProcess returns the output entries after sequence since, waiting
	// up to wait for the first one when there is none yet (and the process
	// runs).
	ReadProcess(ctx context.Context, id string, since uint64, wait time.Duration) (ProcessRead, error)
	// WriteProcess writes to the process's stdin (its terminal).
	WriteProcess(ctx context.Context, id string, data []byte) (int, error)
	// StopProcess sends SIGTERM (SIGKILL with kill) to the process group
	// and waits up to wait for it to exit.
	StopProcess(ctx context.Context, id string, kill bool, wait time.Duration) (ProcessState, error)
	// ListProcesses lists the scope's processes.
	ListProcesses(ctx context.Context) ([]ProcessState, error)
}

// ProcessStart is how process_start starts a process.
type ProcessStart struct {
	Dir string
	Env map[string]string
	TTY bool
}

// ProcessState is a process as the tools show it.
type ProcessState struct {
	ID       string `json:"id"`
	Command  string `json:"command"`
	Status   string `json:"status"` // running or exited
	PID      int    `json:"pid,omitempty"`
	ExitCode *int   `json:"exitCode,omitempty"` // absent while running or when a signal ended it
}

// ProcessEntry is one piece of output.
type ProcessEntry struct {
	Seq    uint64
	Stream string
	Data   []byte
}

// ProcessRead is what ReadProcess found.
type ProcessRead struct {
	State   ProcessState
	Entries []ProcessEntry
	// Dropped counts entries after since no longer kept (the ring was full).
	Dropped uint64
}

// Bounds of the process tools.
const (
	// maxProcessWait bounds waitMs of process_read and process_stop.
	maxProcessWait = 30 * time.Second
	// maxProcessInput bounds the input of one process_write.
	maxProcessInput = 64 << 10
)

var processToolDefs = []mcp.Tool{
	{Name: "process_start", Title: "Start Background Process",
		Description: "Starts a shell command in the background in the workspace (same checks and sandbox as exec) " +
			"and returns its id at once. Read its output with process_read, write to its input with process_write, " +
			"end it with process_stop. Use it for servers, watchers and long runs; a process keeps running between calls.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"command":{"type":"string","description":"The shell command line"},` +
			`"cwd":{"type":"string","description":"Working directory inside the workspace (default: the root)"},` +
			`"env":{"type":"object","additionalProperties":{"type":"string"},"description":"Extra environment variables"},` +
			`"tty":{"type":"boolean","default":false,"description":"Run on a terminal (one combined output stream)"}},` +
			`"required":["command"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(true), IdempotentHint: ptr(false), OpenWorldHint: ptr(true)}},
	{Name: "process_read", Title: "Read Process Output",
		Description: "Returns a background process's status and its output after sequence number `since` " +
			"(0: from the start), as JSON: {id, status, exitCode, output:[{seq, stream, text}], next, dropped, truncated}. " +
			"Call again with since = next to read on. `dropped` counts output lost because the process's buffer was full; " +
			"`truncated` says the answer was cut at the size limit (read on from next). " +
			"With waitMs, waits up to that long (30000 at most) for new output.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"id":{"type":"string","description":"The process id from process_start"},` +
			`"since":{"type":"number","default":0,"description":"Last sequence number already read"},` +
			`"waitMs":{"type":"number","default":0,"description":"How long to wait for new output (milliseconds, at most 30000)"}},` +
			`"required":["id"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ptr(true), DestructiveHint: ptr(false), IdempotentHint: ptr(true), OpenWorldHint: ptr(false)}},
	{Name: "process_write", Title: "Write to Process",
		Description: "Writes text to a background process's standard input (its terminal with tty), 64 KiB at most per call. " +
			"Include the newline a line-reading program waits for; on a terminal, \\u0003 is Ctrl-C.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"id":{"type":"string","description":"The process id"},` +
			`"input":{"type":"string","description":"Text to write"}},"required":["id","input"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(true), IdempotentHint: ptr(false), OpenWorldHint: ptr(false)}},
	{Name: "process_stop", Title: "Stop Process",
		Description: "Stops a background process: SIGTERM to its process group, or SIGKILL with kill. " +
			"Waits up to waitMs (default 2000, at most 30000) for it to exit and returns its status.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"id":{"type":"string","description":"The process id"},` +
			`"kill":{"type":"boolean","default":false,"description":"SIGKILL instead of SIGTERM"},` +
			`"waitMs":{"type":"number","default":2000,"description":"How long to wait for it to exit (milliseconds)"}},"required":["id"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(true), IdempotentHint: ptr(true), OpenWorldHint: ptr(false)}},
	{Name: "process_list", Title: "List Processes",
		Description: "Lists the background processes of this workspace, running and exited, as JSON: [{id, command, status, pid, exitCode}].",
		InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ptr(true), DestructiveHint: ptr(false), IdempotentHint: ptr(true), OpenWorldHint: ptr(false)}},
}

var processToolSet = sync.OnceValue(func() *mcp.ToolSet {
	return mcp.NewToolSet(append(append(filesystemToolDefinitions(), execTool, grepTool), processToolDefs...)...)
})

// WithProcesses adds the process tools (process_start, process_read,
// process_write, process_stop, process_list), served by p, to a server of
// WithGrep's set and its handler inner: it returns the set (the 14
// filesystem tools, exec, grep, the process tools) and the handler. Their
// results stay within the exec output limit (Limits.ExecOutputBytes) and
// the message limit; a wait is bounded (30 s) and ends with ctx.
func WithProcesses(inner mcp.ToolHandler, p Processes, lim Limits) (*mcp.ToolSet, mcp.ToolHandler) {
	base := len(fsToolDefs) + 2
	l := lim.effective()
	return processToolSet(), func(ctx context.Context, c mcp.ToolCall) (*mcp.CallToolResult, error) {
		if c.Index < base {
			return inner(ctx, c)
		}
		switch c.Index - base {
		case 0:
			return processStart(ctx, p, c.Arguments)
		case 1:
			return processRead(ctx, p, c.Arguments, l.single())
		case 2:
			return processWrite(ctx, p, c.Arguments)
		case 3:
			return processStop(ctx, p, c.Arguments)
		case 4:
			return processList(ctx, p, c.Arguments, l.single())
		}
		return nil, fmt.Errorf("fstools: no workspace tool at index %d", c.Index)
	}
}

// jsonResult is a text result holding v as JSON (without HTML escaping,
// which would make output with < > & six times longer than budgeted).
func jsonResult(v any) (*mcp.CallToolResult, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{{Type: "text", Text: strings.TrimSuffix(b.String(), "\n")}}}, nil
}

// waitArg reads a millisecond count, bounded by maxProcessWait.
func waitArg(a *args, field string, def time.Duration) time.Duration {
	ms, ok := a.num(field)
	if !ok {
		return def
	}
	if ms < 0 {
		ms = 0
	}
	return min(time.Duration(ms)*time.Millisecond, maxProcessWait)
}

func processStart(ctx context.Context, p Processes, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a := decodeArgs("process_start", raw)
	command := a.str("command", true)
	o := ProcessStart{Dir: a.str("cwd", false), Env: a.env("env"), TTY: a.boolean("tty", false)}
	if err := a.err(); err != nil {
		return errResult(err)
	}
	if strings.TrimSpace(command) == "" {
		return mcp.ErrorResult("Command cannot be empty"), nil
	}
	st, err := p.StartProcess(ctx, command, o)
	if err != nil {
		return errResult(err)
	}
	return jsonResult(st)
}

type readEntry struct {
	Seq    uint64 `json:"seq"`
	Stream string `json:"stream"`
	Text   string `json:"text"`
}

func processRead(ctx context.Context, p Processes, raw json.RawMessage, budget int) (*mcp.CallToolResult, error) {
	a := decodeArgs("process_read", raw)
	id := a.str("id", true)
	sinceF, _ := a.num("since")
	wait := waitArg(a, "waitMs", 0)
	if err := a.err(); err != nil {
		return errResult(err)
	}
	since := uint64(max(sinceF, 0))
	r, err := p.ReadProcess(ctx, id, since, wait)
	if err != nil {
		return errResult(err)
	}
	out := struct {
		ProcessState
		Output    []readEntry `json:"output"`
		Next      uint64      `json:"next"`
		Dropped   uint64      `json:"dropped"`
		Truncated bool        `json:"truncated"`
	}{ProcessState: r.State, Output: []readEntry{}, Next: since, Dropped: r.Dropped}
	// Entries go in while they fit; an entry that does not fit alone is
	// cut (and read on from the next one).
	used := 512 + len(out.ID) + len(out.Command)*6
	for _, e := range r.Entries {
		text := decodeUTF8(e.Data)
		n := jsonraw.EscapedLen(text, budget) + 64
		if used+n > budget {
			if len(out.Output) == 0 {
				_, cut := jsonraw.ClipEscaped(text, max(budget-used-64, 0))
				if cut < 0 {
					cut = len(text)
				}
				out.Output = append(out.Output, readEntry{e.Seq, e.Stream, text[:cut]})
				out.Next = e.Seq
			}
			out.Truncated = true
			break
		}
		used += n
		out.Output = append(out.Output, readEntry{e.Seq, e.Stream, text})
		out.Next = e.Seq
	}
	return jsonResult(out)
}

func processWrite(ctx context.Context, p Processes, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a := decodeArgs("process_write", raw)
	id := a.str("id", true)
	input := a.str("input", true)
	if err := a.err(); err != nil {
		return errResult(err)
	}
	if len(input) > maxProcessInput {
		return mcp.ErrorResult(fmt.Sprintf("input is %d bytes; at most %d per call", len(input), maxProcessInput)), nil
	}
	n, err := p.WriteProcess(ctx, id, []byte(input))
	if err != nil {
		return errResult(err)
	}
	return jsonResult(map[string]int{"bytesWritten": n})
}

func processStop(ctx context.Context, p Processes, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a := decodeArgs("process_stop", raw)
	id := a.str("id", true)
	kill := a.boolean("kill", false)
	wait := waitArg(a, "waitMs", 2*time.Second)
	if err := a.err(); err != nil {
		return errResult(err)
	}
	st, err := p.StopProcess(ctx, id, kill, wait)
	if err != nil {
		return errResult(err)
	}
	return jsonResult(st)
}

func processList(ctx context.Context, p Processes, raw json.RawMessage, budget int) (*mcp.CallToolResult, error) {
	a := decodeArgs("process_list", raw)
	if err := a.err(); err != nil {
		return errResult(err)
	}
	ps, err := p.ListProcesses(ctx)
	if err != nil {
		return errResult(err)
	}
	if ps == nil {
		ps = []ProcessState{}
	}
	res, err := jsonResult(ps)
	if err == nil && len(res.Content[0].Text) > budget {
		return mcp.ErrorResult("the process list is over the size limit"), nil
	}
	return res, err
}
