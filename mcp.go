package agentbe

import (
	"context"
	"errors"
	"io"
	"net"
	"os/exec"
	"sync"
	"time"

	"github.com/agentbe/agent-backend/internal/fstools"
	"github.com/agentbe/agent-backend/internal/procs"
	"github.com/agentbe/agent-backend/mcp"
)

// NewMCPServer returns an MCP server exposing b's workspace: the 14 tools of
// the official filesystem server and, when b executes commands, exec (which
// runs through b.Exec, so b's safety check and isolation apply) and grep
// (Grep: a content search that runs no program). It has the
// default options; see NewMCPServerWith.
func NewMCPServer(b Backend) *mcp.Server { return NewMCPServerWith(b, MCPServerOptions{}) }

// MCPServerOptions configures NewMCPServerWith: the protocol server's
// options and the bound on exec's output. The zero value is the defaults.
type MCPServerOptions struct {
	// ServerOptions configures the server: among other things a Logger, an
	// OnPanic hook for tool panics, a CallTimeout, and the bound on every
	// message (MaxMessageBytes), within which the tools keep their results.
	mcp.ServerOptions
	// MaxExecOutputBytes bounds the text of an exec result, measured
	// JSON-escaped (a control byte counts six); zero means 1 MiB. Longer
	// output is cut on a UTF-8 boundary and ends with a note giving its
	// full length. It is always kept within the message limit.
	MaxExecOutputBytes int
	// OnToolCall, when set, is called once every tools/call that reached a
	// tool has ended (a panic included), with the call's context, the
	// tool's name, whether the result is an error, and how long the tool
	// ran: e.g. to count calls or audit them. It runs in the call's
	// goroutine, so it must be quick and safe for concurrent use.
	OnToolCall func(ctx context.Context, tool string, isError bool, d time.Duration)
	// Processes adds the background process tools (process_start,
	// process_read, process_write, process_stop, process_list; see
	// docs/processes.md) after exec, on a backend that runs processes.
	// Off by default: the default tool list is the reference's.
	Processes bool
}

// NewMCPServerWith is NewMCPServer with opts.
func NewMCPServerWith(b Backend, opts MCPServerOptions) *mcp.Server {
	var run fstools.ExecFunc
	if Executes(b) {
		run = func(ctx context.Context, command string, env map[string]string, output io.Writer) (fstools.ExecResult, error) {
			eo := ExecOptions{Env: env}
			var stdout, stderr *procs.CapBuffer
			if output != nil {
				// Watched while it runs (progress, a task's output so
				// far): stream both, and collect them here, as Exec does
				// not when they stream.
				stdout = &procs.CapBuffer{Max: max(DefaultMaxOutputBytes, opts.MessageLimit())}
				stderr = &procs.CapBuffer{Max: maxStderrKept}
				eo.Stdout, eo.Stderr = io.MultiWriter(stdout, output), io.MultiWriter(stderr, output)
			}
			out, err := b.Exec(ctx, command, eo)
			if stdout != nil {
				out = stdout.Result()
			}
			res := fstools.ExecResult{Stdout: out}
			if xe := exitErrorOf(err); xe != nil {
				res = fstools.ExecResult{Stdout: xe.Stdout, Stderr: xe.Stderr, ExitCode: xe.ExitCode}
				if stdout != nil {
					res.Stdout, res.Stderr = out, stderr.Bytes()
				}
				err = nil
			} else if err != nil {
				return fstools.ExecResult{}, err
			}
			// The tool cuts the output again, with a note of its own that
			// gives the full length.
			res.Stdout, res.StdoutTotal = procs.SplitTruncated(res.Stdout)
			return res, nil
		}
	}
	lim := fstools.Limits{MessageBytes: opts.MessageLimit(), ExecOutputBytes: opts.MaxExecOutputBytes}
	tools, h := fstools.Tools(run != nil), fstools.Handler(toolsWorkspace(b), run, lim)
	if run != nil { // grep beside exec, as the reference registers them (see grepTool)
		tools, h = fstools.WithGrep(h, grepTool(b), lim)
		if pr, ok := b.(ProcessRunner); ok && opts.Processes {
			tools, h = fstools.WithProcesses(h, mcpProcesses{pr}, lim)
		}
	}
	if opts.OnToolCall != nil {
		h = observeTools(h, opts.OnToolCall)
	}
	return mcp.NewServer(serverInfo, opts.ServerOptions, tools, h)
}

// observeTools wraps h so that done hears of every call's end.
func observeTools(h mcp.ToolHandler, done func(context.Context, string, bool, time.Duration)) mcp.ToolHandler {
	return func(ctx context.Context, call mcp.ToolCall) (res *mcp.CallToolResult, err error) {
		start := time.Now()
		failed := true // until h returns: a panic is a failure
		defer func() { done(ctx, call.Name, failed, time.Since(start)) }()
		res, err = h(ctx, call)
		failed = err != nil || res != nil && res.IsError
		return res, err
	}
}

var serverInfo = mcp.Implementation{Name: "agent-backend", Version: Version}

// MCPOptions controls MCPTransport and MCPClient.
type MCPOptions struct {
	// ScopePath restricts the server to a sub-directory of the backend's
	// workspace (validated like Scope's path).
	ScopePath string
	// Subprocess serves a Local backend's tools from a spawned
	// `agent-backend daemon --local-only` (Binary) instead of this process,
	// as the TypeScript client does. Off by default, because the child only
	// gets the backend's root, scope, isolation and shell: not its Env, the
	// scope's Env, its MaxOutputBytes, MaxReadBytes or safety policy, and
	// --local-only trusts the local user (no dangerous-command check). The
	// default in-process server runs every tool through the backend itself,
	// so all of its configuration holds.
	Subprocess bool
	// Binary is the CLI Subprocess spawns; "" means "agent-backend" on PATH.
	Binary string
	// Client identifies the MCP client in initialize.
	Client mcp.Implementation
	// Server configures the in-process server (its message and exec output
	// limits among others); the zero value is the defaults. It does not
	// reach a Subprocess server or a Remote's daemon.
	Server MCPServerOptions
}

// MCPTransport returns a stream connected to an MCP server (newline-
// delimited JSON-RPC) that operates on b's workspace: a server running in
// this process on b (or on its opts.ScopePath scope), or with Subprocess
// the stdio of a spawned CLI. The transport is tracked by b and closed by
// Destroy; closing it earlier untracks it and releases the scope made for
// opts.ScopePath, so opening and closing transports leaves nothing behind.
//
// A Remote's MCP server is reached over Streamable HTTP, not a stream: use
// MCPClient, or Remote.MCPEndpoint with another MCP client; MCPTransport
// fails with NOT_IMPLEMENTED for it.
func MCPTransport(ctx context.Context, b Backend, opts MCPOptions) (io.ReadWriteCloser, error) {
	if r, _ := rootRemote(b); r != nil {
		return nil, &Error{Code: CodeNotImplemented, Op: "mcp", Backend: KindRemote, Err: ErrNotImplemented,
			Reason: "a Remote's MCP server is reached over Streamable HTTP: use MCPClient, or MCPEndpoint with another MCP client"}
	}
	target, release, err := mcpTarget(b, opts.ScopePath)
	if err != nil {
		return nil, err
	}
	var rwc io.ReadWriteCloser
	if local := rootLocal(b); local != nil && opts.Subprocess {
		rwc, err = spawnDaemon(ctx, local, target, opts.Binary)
		if err != nil {
			release()
			return nil, &Error{Code: CodeMissingUtilities, Op: "mcp", Backend: b.Kind(),
				Err: &wrapped{msg: "cannot start the MCP server", err: err, is: ErrMissingUtility}}
		}
	} else {
		rwc = serveInProcess(target, opts.Server)
	}
	t := &trackedStream{ReadWriteCloser: rwc, hooks: newCloseHooks(release)}
	// A destroyed b closes t at once, inside Track.
	t.hooks.setUntrack(b.Track(t))
	return t, nil
}

// MCPClient returns an initialized MCP client for b's workspace (or its
// opts.ScopePath scope): on MCPTransport for Local and Memory backends, over
// Streamable HTTP to the daemon's /mcp (with the token, X-Root-Dir and
// X-Scope-Path) for a Remote. Calls are never retried. Closing the client
// untracks it and releases its scope; Destroy closes it too. A server that
// cannot be reached or fails to initialize yields CONNECTION_CLOSED (a
// subprocess that cannot start, MISSING_UTILITIES; a daemon refusing the
// token, INVALID_CONFIGURATION). On a Remote, a call that loses the daemon
// fails with CONNECTION_CLOSED too.
func MCPClient(ctx context.Context, b Backend, opts MCPOptions) (*mcp.Client, error) {
	info := opts.Client
	if info.Name == "" {
		info = mcp.Implementation{Name: "agentbe", Version: Version}
	}
	if r, _ := rootRemote(b); r != nil {
		return remoteClient(ctx, b, r, opts, info)
	}
	rwc, err := MCPTransport(ctx, b, opts)
	if err != nil {
		return nil, err
	}
	c := mcp.NewStreamClient(rwc, mcp.ClientOptions{Info: info})
	if _, err := c.Initialize(ctx); err != nil {
		c.Close()
		return nil, &Error{Code: CodeConnectionClosed, Op: "mcp", Backend: b.Kind(),
			Err: &wrapped{msg: "MCP initialize", err: err, is: ErrConnectionClosed}}
	}
	return c, nil
}

// remoteClient is MCPClient for a Remote (or a scope of one).
func remoteClient(ctx context.Context, b Backend, r *Remote, opts MCPOptions, info mcp.Implementation) (*mcp.Client, error) {
	target, release, err := mcpTarget(b, opts.ScopePath)
	if err != nil {
		return nil, err
	}
	_, rel := rootRemote(target)
	hooks := newCloseHooks(release)
	c, err := remoteMCPClient(ctx, r, rel, info, hooks.run)
	if err != nil {
		release()
		return nil, err
	}
	hooks.setUntrack(b.Track(c))
	return c, nil
}

// closeHooks is what closing an MCP transport or client undoes, once: its
// registration with the backend (known only after it was registered) and
// the scope made for it.
type closeHooks struct {
	release func()
	once    sync.Once
	mu      sync.Mutex
	untrack func()
}

func newCloseHooks(release func()) *closeHooks {
	return &closeHooks{release: release, untrack: func() {}}
}

func (h *closeHooks) setUntrack(u func()) {
	if u == nil { // a third-party backend's Track
		u = func() {}
	}
	h.mu.Lock()
	h.untrack = u
	h.mu.Unlock()
}

// run unregisters and releases; only the first call does anything.
func (h *closeHooks) run() {
	h.once.Do(func() {
		h.mu.Lock()
		u := h.untrack
		h.mu.Unlock()
		u()
		h.release()
	})
}

// trackedStream is a transport registered with its backend: Close closes
// the stream, then runs its hooks. Closing it twice returns the first
// result.
type trackedStream struct {
	io.ReadWriteCloser
	hooks *closeHooks
	once  sync.Once
	err   error
}

func (t *trackedStream) Close() error {
	t.once.Do(func() {
		t.err = t.ReadWriteCloser.Close()
		t.hooks.run()
	})
	return t.err
}

// mcpTarget applies opts.ScopePath to b. release destroys the scope it made
// (a no-op without one).
func mcpTarget(b Backend, scopePath string) (target Backend, release func(), err error) {
	if scopePath == "" {
		return b, func() {}, nil
	}
	s, err := b.Scope(scopePath, ScopeOptions{})
	if err != nil {
		return nil, nil, err
	}
	return s, func() { _ = s.Destroy(context.Background()) }, nil
}

// rootLocal returns the Local backend under b (through scopes), or nil.
func rootLocal(b Backend) *Local {
	for {
		switch v := b.(type) {
		case *Local:
			return v
		case *Scope:
			b = v.parent
		default:
			return nil
		}
	}
}

// spawnDaemon starts the CLI in local-only mode on target's directory.
func spawnDaemon(ctx context.Context, l *Local, target Backend, binary string) (io.ReadWriteCloser, error) {
	if binary == "" {
		binary = "agent-backend"
	}
	args := []string{"daemon", "--rootDir", l.rootDir, "--local-only",
		"--isolation", string(l.sb.Mode()), "--shell", shellFlag(l.shell)}
	if s, ok := target.(*Scope); ok {
		args = append(args, "--scopePath", s.fullRel)
	}
	cmd := exec.Command(binary, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, &Error{Code: CodeMissingUtilities, Op: "mcp", Backend: KindLocal,
			Reason: "cannot start " + binary, Err: errors.Join(ErrMissingUtility, err)}
	}
	return &procStream{ReadCloser: stdout, WriteCloser: stdin, cmd: cmd}, nil
}

func shellFlag(shell string) string {
	if shell == "/bin/sh" {
		return "sh"
	}
	return "bash"
}

// procStream is the stdio of a child process; Close ends the child.
type procStream struct {
	io.ReadCloser
	io.WriteCloser
	cmd  *exec.Cmd
	once sync.Once
}

// Close sends EOF on the child's stdin, which makes the daemon exit, and
// kills it if it has not exited within a grace period. Idempotent.
func (p *procStream) Close() error {
	p.once.Do(func() {
		_ = p.WriteCloser.Close()
		done := make(chan struct{})
		go func() {
			_ = p.cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(closeGrace):
			_ = p.cmd.Process.Kill()
			<-done
		}
	})
	return nil
}

// closeGrace is how long a spawned daemon gets to exit after stdin closes.
const closeGrace = 2 * time.Second

// serveInProcess connects a pipe to an MCP server on target running in this
// process. Closing the returned end stops the server: its running calls are
// cancelled and Close returns once it has stopped.
func serveInProcess(target Backend, opts MCPServerOptions) io.ReadWriteCloser {
	client, server := net.Pipe()
	s := NewMCPServerWith(target, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mcp.ServeStdio(ctx, s, server, server)
		server.Close()
	}()
	return &inProcStream{Conn: client, cancel: cancel, done: done}
}

// inProcStream is the client end of an in-process server.
type inProcStream struct {
	net.Conn
	cancel context.CancelFunc
	done   chan struct{}
}

func (p *inProcStream) Close() error {
	err := p.Conn.Close()
	p.cancel()
	<-p.done
	return err
}
