package agentbe

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// ErrorCode identifies a failure kind; the values are the spec's codes.
type ErrorCode string

// Error codes shared by every backend.
const (
	CodeEmptyCommand         ErrorCode = "EMPTY_COMMAND"
	CodeUnsafeCommand        ErrorCode = "UNSAFE_COMMAND"
	CodeExecFailed           ErrorCode = "EXEC_FAILED"
	CodeExecError            ErrorCode = "EXEC_ERROR"
	CodeReadFailed           ErrorCode = "READ_FAILED"
	CodeWriteFailed          ErrorCode = "WRITE_FAILED"
	CodeLsFailed             ErrorCode = "LS_FAILED"
	CodePathEscape           ErrorCode = "PATH_ESCAPE_ATTEMPT"
	CodeMissingUtilities     ErrorCode = "MISSING_UTILITIES"
	CodeInvalidConfiguration ErrorCode = "INVALID_CONFIGURATION"
	CodeDangerousOperation   ErrorCode = "DANGEROUS_OPERATION"
	CodeConnectionClosed     ErrorCode = "CONNECTION_CLOSED"
	CodeKeyNotFound          ErrorCode = "KEY_NOT_FOUND"
	// CodeNotImplemented and CodeDestroyed are not in the spec's table; they
	// name the not-implemented error and operations on a destroyed backend.
	CodeNotImplemented ErrorCode = "NOT_IMPLEMENTED"
	CodeDestroyed      ErrorCode = "DESTROYED"
)

// CodeDaemonFull is not in the spec's table either: a Remote's daemon is up
// but serves as many connections as it accepts (see ErrDaemonFull).
const CodeDaemonFull ErrorCode = "DAEMON_FULL"

// Sentinel errors, matched with errors.Is against any error a backend
// returns.
var (
	// ErrPathEscape: a path resolves outside the workspace or scope.
	ErrPathEscape = wspath.ErrEscape
	// ErrDangerous: a command was blocked by the safety check (both the
	// DANGEROUS_OPERATION and the UNSAFE_COMMAND classes).
	ErrDangerous = errors.New("dangerous command blocked")
	// ErrNotImplemented: the backend does not support the operation.
	ErrNotImplemented = errors.New("not implemented")
	// ErrConnectionClosed: the connection to a remote host was lost.
	ErrConnectionClosed = errors.New("connection closed")
	// ErrDestroyed: the backend (or the parent of a scope) was destroyed.
	ErrDestroyed = errors.New("backend destroyed")
	// ErrEmptyCommand: Exec was given an empty or blank command.
	ErrEmptyCommand = errors.New("empty command")
	// ErrInvalidConfig: a Config failed validation.
	ErrInvalidConfig = errors.New("invalid configuration")
	// ErrMissingUtility: a required system tool (bwrap, a shell) is missing.
	ErrMissingUtility = errors.New("required utility not available")
)

// Error is the error type every backend returns. Err holds the cause (a
// sentinel above, an *fs.PathError, an *ExitError, …) and is what errors.Is
// and errors.As look through. Path is the path as the caller gave it, never a
// host path, so messages reveal nothing outside the workspace.
type Error struct {
	Code    ErrorCode
	Op      string // the operation: "read", "exec", "scope", …
	Path    string // the offending path, as given
	Command string // the command, for exec errors
	Backend Kind
	// Reason and Guidance explain a blocked command.
	Reason   string
	Guidance string
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("agentbe: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(" ")
	}
	if e.Path != "" {
		fmt.Fprintf(&b, "%q ", e.Path)
	}
	if e.Command != "" && e.Code != CodeExecFailed {
		fmt.Fprintf(&b, "command %q ", e.Command)
	}
	s := strings.TrimSuffix(b.String(), " ")
	b.Reset()
	b.WriteString(s)
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	} else if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Guidance != "" {
		b.WriteString(" (")
		b.WriteString(e.Guidance)
		b.WriteString(")")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the Code of the first *Error in err's chain, or "".
func CodeOf(err error) ErrorCode {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// ExitError reports a command that ran and exited with a non-zero status (or
// was killed by a signal, ExitCode -1).
type ExitError struct {
	Command  string
	ExitCode int
	// Signal names the signal that killed the command ("KILL", "TERM"),
	// when a Remote's daemon reported one; ExitCode is then -1.
	Signal string
	Stdout []byte
	Stderr []byte
}

func (e *ExitError) Error() string {
	msg := strings.TrimSpace(string(e.Stderr))
	if msg == "" {
		msg = strings.TrimSpace(string(e.Stdout))
	}
	if msg == "" {
		return fmt.Sprintf("command exited with code %d", e.ExitCode)
	}
	return fmt.Sprintf("command exited with code %d: %s", e.ExitCode, msg)
}

func exitErrorOf(err error) *ExitError {
	var xe *ExitError
	if errors.As(err, &xe) {
		return xe
	}
	return nil
}
