package agentbe

import (
	"context"
	"errors"
	"time"
)

// Errors of processes, wrapped in an *Error.
var (
	// ErrProcessNotFound: no process of that id in this scope (it never
	// existed, was removed, or belongs to another scope).
	ErrProcessNotFound = errors.New("process not found")
	// ErrTooManyProcesses: the scope already runs its cap of concurrent
	// processes (LocalConfig.MaxProcesses).
	ErrTooManyProcesses = errors.New("too many running processes")
	// ErrProcessRunning: a running process cannot be removed.
	ErrProcessRunning = errors.New("process is still running")
	// ErrProcessExited: the process has exited (its stdin is closed).
	ErrProcessExited = errors.New("process has exited")
	// ErrNotTTY: the process has no pty to resize.
	ErrNotTTY = errors.New("process is not running in tty mode")
)

// Error codes of processes.
const (
	CodeProcessNotFound  ErrorCode = "PROCESS_NOT_FOUND"
	CodeTooManyProcesses ErrorCode = "TOO_MANY_PROCESSES"
	CodeProcessConflict  ErrorCode = "PROCESS_CONFLICT"
)

// DefaultMaxProcesses is the cap on concurrent processes per scope when
// LocalConfig.MaxProcesses is zero.
const DefaultMaxProcesses = 64

// DefaultProcessOutputBytes is the size of a process's output ring when
// ProcessOptions.OutputBytes is zero: 1 MiB.
const DefaultProcessOutputBytes = 1 << 20

// ProcessOptions configures StartProcess.
type ProcessOptions struct {
	// Args, when non-nil, makes the command a program run with these
	// arguments, with no shell interpretation of either (they are quoted
	// for the shell); nil runs the command as a shell command line, as
	// Exec does.
	Args []string
	// Dir is the working directory, resolved like any other path; it must
	// be an existing directory inside the workspace.
	Dir string
	// Env is merged over the backend and scope environments.
	Env map[string]string
	// TTY runs the process on a pseudo-terminal (its stdin, stdout and
	// stderr, and its controlling terminal), of Cols x Rows (80x24 when
	// zero). Its output is one stream, StreamPTY.
	TTY        bool
	Cols, Rows int
	// OutputBytes bounds the output kept for reading (the ring); once
	// full, the oldest entries are dropped. Zero means
	// DefaultProcessOutputBytes.
	OutputBytes int
}

// Stream names where an output entry came from.
type Stream string

// The streams of a process.
const (
	StreamStdout Stream = "stdout"
	StreamStderr Stream = "stderr"
	StreamPTY    Stream = "pty"
)

// OutputEntry is one piece of a process's output.
type OutputEntry struct {
	// Seq numbers the entries of one process across its streams, from 1,
	// without gaps.
	Seq    uint64
	Stream Stream
	Time   time.Time
	Data   []byte
	// Dropped is the number of entries before this one that the reader
	// will never see: they were dropped from the full ring before it read
	// them. It is 0 when nothing was missed.
	Dropped uint64
}

// ProcessInfo describes a process.
type ProcessInfo struct {
	ID      string
	Command string
	Args    []string // nil for a shell command line
	Dir     string
	TTY     bool
	// PID is the process id while it runs (on this host for Local; on the
	// daemon's host for Remote), 0 once it has exited.
	PID     int
	Running bool
	// ExitCode is the exit status once exited, or -1 when a signal ended
	// it (Signal then names it when known).
	ExitCode  int
	Signal    string
	StartedAt time.Time
	ExitedAt  time.Time
}

// Signal is a signal sent to a process, named as in x/crypto/ssh.
type Signal string

// The signals a process can be sent.
const (
	SIGHUP  Signal = "HUP"
	SIGINT  Signal = "INT"
	SIGKILL Signal = "KILL"
	SIGTERM Signal = "TERM"
)

// ProcessRunner is implemented by the backends that run processes: Local,
// Remote, and Scope (whose methods fail with ErrNotImplemented over a
// backend that does not execute).
//
// A process belongs to the scope it was started from: List, Process and
// RemoveProcess see only that scope's processes, and the scope's cap on
// concurrent processes applies. It lives until it exits or the root
// backend is destroyed, whatever happens to the scope value it was started
// from (a scope made per request, as the daemon does, finds it again by
// id).
type ProcessRunner interface {
	// StartProcess starts command (see ProcessOptions) with the same
	// checks, sandbox and environment as Exec, and returns once it runs.
	StartProcess(ctx context.Context, command string, opts ProcessOptions) (*Process, error)
	// Process returns the process of that id.
	Process(ctx context.Context, id string) (*Process, error)
	// Processes lists the scope's processes, running and exited, by start.
	Processes(ctx context.Context) ([]ProcessInfo, error)
	// RemoveProcess forgets an exited process (ErrProcessRunning while it
	// runs). Exited processes are otherwise kept, the oldest forgotten once
	// the scope holds more than its cap of them.
	RemoveProcess(ctx context.Context, id string) error
}

// Process is a handle on a process started by StartProcess. Its methods
// are safe for concurrent use; several handles may name one process.
type Process struct {
	id   string
	impl processImpl
}

// processImpl is a process of one backend kind.
type processImpl interface {
	info(ctx context.Context) (ProcessInfo, error)
	wait(ctx context.Context) (ProcessInfo, error)
	write(ctx context.Context, p []byte) (int, error)
	closeStdin(ctx context.Context) error
	signal(ctx context.Context, sig Signal) error
	output(ctx context.Context, since uint64, follow bool, fn func(OutputEntry) error) error
	resize(ctx context.Context, cols, rows int) error
}

// ID is the process's id, unique in its backend.
func (p *Process) ID() string { return p.id }

// Info describes the process now.
func (p *Process) Info(ctx context.Context) (ProcessInfo, error) { return p.impl.info(ctx) }

// Wait waits until the process has exited (or ctx is done) and describes
// it. Unlike os/exec, a non-zero exit is not an error: see
// ProcessInfo.ExitCode.
func (p *Process) Wait(ctx context.Context) (ProcessInfo, error) { return p.impl.wait(ctx) }

// Write writes to the process's stdin (its terminal, in TTY mode). It
// fails with ErrProcessExited once the process has exited.
func (p *Process) Write(b []byte) (int, error) { return p.impl.write(context.Background(), b) }

// WriteContext is Write with a context (for Remote, the request's).
func (p *Process) WriteContext(ctx context.Context, b []byte) (int, error) {
	return p.impl.write(ctx, b)
}

// CloseStdin closes the process's stdin, so that it reads end of file. In
// TTY mode it sends the terminal's end-of-file character (^D) instead.
func (p *Process) CloseStdin(ctx context.Context) error { return p.impl.closeStdin(ctx) }

// Signal sends sig to the process's whole process group (and, in TTY mode,
// to the terminal's foreground group). In TTY mode SIGINT goes where ^C
// would: to the foreground group only, so an interactive shell is left
// alone while a job of its runs. Sending to an exited process does
// nothing.
func (p *Process) Signal(ctx context.Context, sig Signal) error { return p.impl.signal(ctx, sig) }

// Stop asks the process to end: SIGTERM to its process group.
func (p *Process) Stop(ctx context.Context) error { return p.impl.signal(ctx, SIGTERM) }

// Kill ends the process: SIGKILL to its process group (under bwrap, to the
// whole sandbox).
func (p *Process) Kill(ctx context.Context) error { return p.impl.signal(ctx, SIGKILL) }

// Resize sets the size of the process's terminal (ErrNotTTY without one).
func (p *Process) Resize(ctx context.Context, cols, rows int) error {
	return p.impl.resize(ctx, cols, rows)
}

// Output returns the entries still in the ring after sequence since
// (exclusive: since 0 reads from the start) without waiting. An entry's
// Dropped reports the entries missed before it.
func (p *Process) Output(ctx context.Context, since uint64) ([]OutputEntry, error) {
	var out []OutputEntry
	err := p.impl.output(ctx, since, false, func(e OutputEntry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// Follow calls fn with every entry after sequence since (exclusive), first
// those still in the ring, then each new one as it comes, until the
// process has exited and its output has all been delivered (Follow then
// returns nil), ctx is done, or fn returns an error (returned as is). A
// client that lost its connection calls Follow again with the last Seq it
// saw and misses nothing that is still in the ring; anything it did miss
// is reported by the next entry's Dropped.
func (p *Process) Follow(ctx context.Context, since uint64, fn func(OutputEntry) error) error {
	return p.impl.output(ctx, since, true, fn)
}
