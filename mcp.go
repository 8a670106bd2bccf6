package agentbe

import (
	"context"
	"errors"
	"io"
	"net"
	"os/exec"
	"sync"
	"time"

	"github.com/agentbe/agent-backend/mcp"
)

// Version is the agentbe version reported to MCP clients and by the daemon.
const Version = "0.1.0"

// NewMCPServer returns an MCP server exposing b's workspace: the 14 tools of
// the official filesystem server and, when b executes commands, exec (which
// runs through b.Exec, so b's safety check and isolation apply).
func NewMCPServer(b Backend) *mcp.Server {
	var run mcp.ExecFunc
	if Executes(b) {
		run = func(ctx context.Context, command string, env map[string]string) (mcp.ExecResult, error) {
			out, err := b.Exec(ctx, command, ExecOptions{Env: env})
			if xe := exitErrorOf(err); xe != nil {
				return mcp.ExecResult{Stdout: xe.Stdout, Stderr: xe.Stderr, ExitCode: xe.ExitCode}, nil
			}
			return mcp.ExecResult{Stdout: out}, err
		}
	}
	return mcp.NewSetServer(serverInfo, mcp.ServerOptions{}, mcp.WorkspaceToolSet(run != nil), mcp.WorkspaceHandler(b, run))
}

var serverInfo = mcp.Implementation{Name: "agent-backend", Version: Version}

// MCPOptions controls MCPTransport and MCPClient.
type MCPOptions struct {
	// ScopePath restricts the server to a sub-directory of the backend's
	// workspace (validated like Scope's path).
	ScopePath string
	// Binary is the agent-backend CLI a Local backend spawns; "" means
	// "agent-backend" on PATH.
	Binary string
	// InProcess serves a Local backend's tools in this process instead of
	// spawning the CLI. Memory backends are always served in-process: a
	// subprocess could never see their data.
	//
	// The spawned CLI runs in --local-only mode, which by the daemon spec
	// trusts the local user and does not block dangerous commands; the
	// in-process server runs exec through the backend itself, so its
	// safety check (AllowDangerous false) applies. Choose InProcess to keep
	// that check on the exec tool.
	InProcess bool
	// Client identifies the MCP client in initialize.
	Client mcp.Implementation
}

// MCPTransport returns a stream connected to an MCP server (newline-
// delimited JSON-RPC) that operates on b's workspace. For a Local backend
// (or a scope of one) it is the stdio of a spawned `agent-backend daemon
// --local-only` with the backend's root, scope, isolation and shell; for a
// Memory backend, or with InProcess, a server running in this process. The
// transport is tracked by b and closed by Destroy.
func MCPTransport(ctx context.Context, b Backend, opts MCPOptions) (io.ReadWriteCloser, error) {
	target, err := mcpTarget(b, opts.ScopePath)
	if err != nil {
		return nil, err
	}
	var rwc io.ReadWriteCloser
	if local := rootLocal(b); local != nil && !opts.InProcess {
		rwc, err = spawnDaemon(ctx, local, target, opts.Binary)
		if err != nil {
			return nil, err
		}
	} else {
		rwc = serveInProcess(target)
	}
	b.Track(rwc)
	return rwc, nil
}

// MCPClient returns an initialized MCP client on MCPTransport; it is
// tracked by b and closed by Destroy.
func MCPClient(ctx context.Context, b Backend, opts MCPOptions) (*mcp.Client, error) {
	rwc, err := MCPTransport(ctx, b, opts)
	if err != nil {
		return nil, err
	}
	info := opts.Client
	if info.Name == "" {
		info = mcp.Implementation{Name: "agentbe", Version: Version}
	}
	c := mcp.NewStreamClient(rwc, mcp.ClientOptions{Info: info})
	if _, err := c.Initialize(ctx); err != nil {
		c.Close()
		return nil, &Error{Code: CodeExecError, Op: "mcp", Backend: b.Kind(), Err: err}
	}
	b.Track(c)
	return c, nil
}

// mcpTarget applies opts.ScopePath to b.
func mcpTarget(b Backend, scopePath string) (Backend, error) {
	if scopePath == "" {
		return b, nil
	}
	return b.Scope(scopePath, ScopeOptions{})
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
		"--isolation", string(l.sb.mode()), "--shell", shellFlag(l.shell)}
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
// process; closing the returned end stops the server.
func serveInProcess(target Backend) io.ReadWriteCloser {
	client, server := net.Pipe()
	s := NewMCPServer(target)
	go func() {
		_ = mcp.ServeStdio(context.Background(), s, server, server)
		server.Close()
	}()
	return client
}

// MCPClient is the package-level MCPClient for l.
func (l *Local) MCPClient(ctx context.Context, opts MCPOptions) (*mcp.Client, error) {
	return MCPClient(ctx, l, opts)
}

// MCPTransport is the package-level MCPTransport for l.
func (l *Local) MCPTransport(ctx context.Context, opts MCPOptions) (io.ReadWriteCloser, error) {
	return MCPTransport(ctx, l, opts)
}

// MCPClient is the package-level MCPClient for m (always in-process).
func (m *Memory) MCPClient(ctx context.Context, opts MCPOptions) (*mcp.Client, error) {
	return MCPClient(ctx, m, opts)
}

// MCPTransport is the package-level MCPTransport for m (always in-process).
func (m *Memory) MCPTransport(ctx context.Context, opts MCPOptions) (io.ReadWriteCloser, error) {
	return MCPTransport(ctx, m, opts)
}

// MCPClient is the package-level MCPClient for s: the server is confined to
// the scope (a spawned CLI gets --scopePath).
func (s *Scope) MCPClient(ctx context.Context, opts MCPOptions) (*mcp.Client, error) {
	return MCPClient(ctx, s, opts)
}

// MCPTransport is the package-level MCPTransport for s.
func (s *Scope) MCPTransport(ctx context.Context, opts MCPOptions) (io.ReadWriteCloser, error) {
	return MCPTransport(ctx, s, opts)
}
