package agentbe

import (
	"context"
	"log/slog"
	"time"
)

// LogMode selects which operations an OpLogger receives.
type LogMode int

const (
	// LogStandard logs modifying operations only: exec, write, mkdir,
	// remove, rename, touch.
	LogStandard LogMode = iota
	// LogVerbose logs every operation, reads included.
	LogVerbose
)

// OpEntry is one logged operation.
type OpEntry struct {
	Time     time.Time
	Op       string // "exec", "read", "write", "mkdir", "remove", …
	Path     string // the path as given (second path for rename in Path2)
	Path2    string
	Command  string
	Scope    string // the scope path relative to the root backend, "" at the root
	Success  bool
	Duration time.Duration
	Stdout   string // exec only, when collected
	Stderr   string // exec only, when collected
	Err      error
}

// OpLogger receives operation entries. LogOp is called synchronously after
// each operation and must be safe for concurrent use.
type OpLogger interface {
	LogOp(OpEntry)
}

// ContextOpLogger is an OpLogger that also receives the context the
// operation ran with, e.g. to read a request id or a trace id from it. A
// backend calls LogOpContext instead of LogOp when its logger implements
// it.
type ContextOpLogger interface {
	OpLogger
	LogOpContext(ctx context.Context, e OpEntry)
}

// modifying lists the operations LogStandard reports.
var modifying = map[string]bool{
	"exec": true, "write": true, "create": true, "mkdir": true,
	"remove": true, "rename": true, "touch": true,
}

// opLog is the logger bound to a backend or scope.
type opLog struct {
	logger OpLogger
	mode   LogMode
	scope  string
}

// begin returns a function that logs the finished operation; it costs
// nothing when no logger is configured or the mode excludes op.
func (l opLog) begin(ctx context.Context, op, p string) func(err error) {
	return l.begin2(ctx, op, p, "")
}

// begin2 is begin for operations on two paths (rename).
func (l opLog) begin2(ctx context.Context, op, p, p2 string) func(err error) {
	if l.logger == nil || (l.mode == LogStandard && !modifying[op]) {
		return func(error) {}
	}
	start := time.Now()
	return func(err error) {
		l.log(ctx, OpEntry{Time: start, Op: op, Path: p, Path2: p2, Scope: l.scope,
			Success: err == nil, Duration: time.Since(start), Err: err})
	}
}

func (l opLog) logExec(ctx context.Context, start time.Time, command, stdout, stderr string, err error) {
	if l.logger == nil {
		return
	}
	l.log(ctx, OpEntry{Time: start, Op: "exec", Command: command, Scope: l.scope,
		Success: err == nil, Duration: time.Since(start), Stdout: stdout, Stderr: stderr, Err: err})
}

// log hands e to the logger, with ctx when it takes one.
func (l opLog) log(ctx context.Context, e OpEntry) {
	if cl, ok := l.logger.(ContextOpLogger); ok {
		cl.LogOpContext(ctx, e)
		return
	}
	l.logger.LogOp(e)
}

// SlogLogger adapts a *slog.Logger: successful operations at Info, failures
// at Warn.
type SlogLogger struct {
	Logger *slog.Logger
}

// LogOp implements OpLogger.
func (s SlogLogger) LogOp(e OpEntry) {
	lg := s.Logger
	if lg == nil {
		lg = slog.Default()
	}
	attrs := []slog.Attr{slog.String("op", e.Op), slog.Bool("success", e.Success),
		slog.Duration("duration", e.Duration)}
	if e.Path != "" {
		attrs = append(attrs, slog.String("path", e.Path))
	}
	if e.Path2 != "" {
		attrs = append(attrs, slog.String("path2", e.Path2))
	}
	if e.Command != "" {
		attrs = append(attrs, slog.String("command", e.Command))
	}
	if e.Scope != "" {
		attrs = append(attrs, slog.String("scope", e.Scope))
	}
	if e.Stdout != "" {
		attrs = append(attrs, slog.String("stdout", e.Stdout))
	}
	if e.Stderr != "" {
		attrs = append(attrs, slog.String("stderr", e.Stderr))
	}
	level := slog.LevelInfo
	if e.Err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", e.Err.Error()))
	}
	lg.LogAttrs(context.Background(), level, "agentbe operation", attrs...)
}
