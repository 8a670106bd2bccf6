// Package agentbe gives AI agents a sandboxed workspace: one API for files,
// shell commands and MCP tools, whether the workspace is a local directory
// (Local), an in-memory store (Memory) or a sub-directory of either (Scope).
//
// Every path handed to a backend follows the project's path conventions:
// relative paths resolve under the workspace root, absolute paths under the
// root are used as they are, any other absolute path is treated as relative
// to the root, and a ".." that would leave the root is rejected with an error
// wrapping ErrPathEscape. Local backends additionally perform every file
// access through an *os.Root, so no symlink can lead outside the workspace.
package agentbe

import (
	"context"
	"io"
	"io/fs"
	"time"
)

// Kind names the type of a backend.
type Kind string

// Backend kinds.
const (
	KindLocal  Kind = "local"
	KindRemote Kind = "remote"
	KindMemory Kind = "memory"
)

// Backend is the API shared by every kind of workspace. Methods that block
// take a context first. All methods are safe for concurrent use.
//
// File operations return errors that wrap the underlying cause, so a missing
// file satisfies errors.Is(err, fs.ErrNotExist) on every backend and a path
// leaving the workspace satisfies errors.Is(err, ErrPathEscape). After
// Destroy every operation fails with an error wrapping ErrDestroyed.
type Backend interface {
	// Kind reports the backend type; a Scope reports the kind it wraps.
	Kind() Kind
	// RootDir is the absolute workspace root (for a Scope: the parent's root
	// joined with the scope path).
	RootDir() string
	// Status reports the connection status.
	Status() Status
	// OnStatusChange registers fn to be called on every status transition
	// and returns a function that removes it.
	OnStatusChange(fn func(old, new Status)) (unsubscribe func())
	// Track registers c to be closed when the (root) backend is destroyed,
	// and returns the function that unregisters it without closing it (for
	// a resource released earlier, so that a long-lived backend stays
	// flat); calling it again does nothing. Tracking once Destroy has
	// started closes c at once. A nil c is ignored.
	Track(c io.Closer) (untrack func())
	// Destroy releases every tracked resource and moves the backend to
	// StatusDestroyed. It is idempotent. Destroying a Scope only unregisters
	// it from its parent.
	Destroy(ctx context.Context) error
	// Scope returns a view of the backend restricted to the sub-directory p.
	Scope(p string, opts ScopeOptions) (*Scope, error)

	// Read returns the whole content of a file.
	Read(ctx context.Context, p string) ([]byte, error)
	// Write creates or replaces a file atomically, creating missing parent
	// directories.
	Write(ctx context.Context, p string, data []byte) error
	// Open streams a file's content.
	Open(ctx context.Context, p string) (io.ReadCloser, error)
	// Create returns a writer whose content replaces the file atomically
	// when Close returns nil. Missing parent directories are created.
	// Abandoning the writer (a failed Close, or ctx done before Close)
	// leaves the previous content in place.
	Create(ctx context.Context, p string) (io.WriteCloser, error)
	// ReadDir lists the names of the immediate children of a directory,
	// sorted.
	ReadDir(ctx context.Context, p string) ([]string, error)
	// Mkdir creates a directory and any missing parents.
	Mkdir(ctx context.Context, p string) error
	// Exists reports whether p exists. A path that escapes the workspace is
	// an error, a missing path is not.
	Exists(ctx context.Context, p string) (bool, error)
	// Stat describes p, following symbolic links.
	Stat(ctx context.Context, p string) (fs.FileInfo, error)
	// Lstat describes p without following a final symbolic link.
	Lstat(ctx context.Context, p string) (fs.FileInfo, error)
	// Remove deletes a file or directory.
	Remove(ctx context.Context, p string, opts RemoveOptions) error
	// Rename moves oldPath to newPath; both must stay in the workspace.
	Rename(ctx context.Context, oldPath, newPath string) error
	// Touch creates an empty file if p does not exist; it never truncates.
	Touch(ctx context.Context, p string) error
	// RealPath resolves p, following symbolic links that stay inside the
	// workspace, and returns the absolute path (under RootDir) it names.
	// The final element need not exist. A link that leads outside the
	// workspace yields an error wrapping ErrPathEscape.
	RealPath(ctx context.Context, p string) (string, error)

	// Exec runs command in a shell in the workspace and returns its
	// standard output (nil when opts.Stdout is set). A non-zero exit
	// returns an error that errors.As can turn into an *ExitError. Backends
	// that cannot execute return an error wrapping ErrNotImplemented.
	Exec(ctx context.Context, command string, opts ExecOptions) ([]byte, error)
}

// RemoveOptions controls Remove.
type RemoveOptions struct {
	// Recursive removes a directory and everything below it. Symbolic links
	// inside are removed, never followed.
	Recursive bool
	// Force makes removing a missing path succeed.
	Force bool
}

// ExecOptions controls one Exec call. The zero value runs the command in the
// workspace (or scope) root with no extra environment, no stdin and no
// timeout beyond ctx.
type ExecOptions struct {
	// Dir is the working directory, resolved like any other path; it must be
	// an existing directory inside the workspace.
	Dir string
	// Env is merged over the process, backend and scope environments.
	Env map[string]string
	// Stdin feeds the command; nil means /dev/null.
	Stdin io.Reader
	// Stdout and Stderr, when set, receive output as it is produced instead
	// of it being collected. MaxOutputBytes does not apply to them.
	Stdout io.Writer
	Stderr io.Writer
	// Timeout, when positive, kills the command's whole process group once
	// elapsed, like cancelling ctx does.
	Timeout time.Duration
}

// ScopeOptions configures a Scope.
type ScopeOptions struct {
	// Env applies to every command run in the scope; it overrides the
	// parent's environment and is overridden by per-call Env.
	Env map[string]string
	// Logger receives the scope's operations; nil inherits the parent's.
	Logger OpLogger
	// LogMode selects which operations Logger receives.
	LogMode LogMode
	// Limits bound each command of the scope, overriding the parent's
	// per-command limits where set (a zero field keeps the parent's).
	// Local backends only.
	Limits ResourceLimits
	// Group bounds the sum of the commands of every scope made with it
	// (see ResourceGroup); nil keeps the parent's. A nested scope without
	// a Group stays in its parent's. Local backends only, the group made
	// by the same backend.
	Group *ResourceGroup
	// Network overrides the parent's network mode ("" keeps it). Local
	// backends only; NetworkNone needs the bwrap isolation mode.
	Network Network
}

// confinesExec reports whether o sets anything of the scope's commands'
// resources or network.
func (o ScopeOptions) confinesExec() bool {
	return !o.Limits.IsZero() || o.Group != nil || o.Network != ""
}

// Executes reports whether b can run commands (Memory backends, and scopes of
// them, cannot).
func Executes(b Backend) bool {
	k := b.Kind()
	return k == KindLocal || k == KindRemote
}

// Version is the agentbe version: what MCP clients see as the server's
// version and what the daemon reports on /health and the CLI's version
// command prints (beside the module version and VCS revision the Go
// toolchain records in the binary).
const Version = "0.1.0"
