package agentbe

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/sandbox"
)

func newExecLocal(t *testing.T, cfg LocalConfig) *Local {
	t.Helper()
	if cfg.RootDir == "" {
		cfg.RootDir = t.TempDir()
	}
	if cfg.Isolation == "" {
		cfg.Isolation = IsolationSoftware
	}
	l, err := NewLocal(cfg)
	mustOK(t, err)
	t.Cleanup(func() { l.Destroy(context.Background()) })
	return l
}

func TestExecBasics(t *testing.T) {
	ctx := context.Background()
	t.Setenv("AGENTBE_PROC_VAR", "proc")
	t.Setenv("AGENTBE_OVERRIDE", "proc")
	l := newExecLocal(t, LocalConfig{AllowDangerous: true,
		Env: map[string]string{"AGENTBE_OVERRIDE": "backend", "AGENTBE_B": "backend"}})
	root := l.jailHost(t)
	mustOK(t, l.Mkdir(ctx, "sub/dir"))

	tests := []struct {
		name, cmd string
		opts      ExecOptions
		want      string
	}{
		{"stdout", "echo hello", ExecOptions{}, "hello\n"},
		{"cwd is root", "pwd", ExecOptions{}, root + "\n"},
		{"HOME is cwd", `echo "$HOME"`, ExecOptions{}, root + "\n"},
		{"Dir", "pwd; echo $HOME", ExecOptions{Dir: "sub/dir"}, root + "/sub/dir\n" + root + "/sub/dir\n"},
		{"Dir absolute in root", "pwd", ExecOptions{Dir: filepath.Join(root, "sub")}, root + "/sub\n"},
		{"process env not inherited", "echo $AGENTBE_PROC_VAR", ExecOptions{}, "\n"},
		{"clean base", "echo $PATH $LANG $TERM", ExecOptions{}, sandbox.DefaultPath + " C.UTF-8 dumb\n"},
		{"backend over process", "echo $AGENTBE_OVERRIDE $AGENTBE_B", ExecOptions{}, "backend backend\n"},
		{"call over backend", "echo $AGENTBE_OVERRIDE", ExecOptions{Env: map[string]string{"AGENTBE_OVERRIDE": "call"}}, "call\n"},
		{"stdin is empty", "cat; echo done", ExecOptions{}, "done\n"},
		{"stdin given", "tr a-z A-Z", ExecOptions{Stdin: strings.NewReader("abc")}, "ABC"},
		{"bash preferred", `echo ${BASH_VERSION:+bash}`, ExecOptions{}, "bash\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := l.Exec(ctx, tt.cmd, tt.opts)
			if err != nil || string(out) != tt.want {
				t.Fatalf("Exec(%q) = %q, %v; want %q", tt.cmd, out, err, tt.want)
			}
		})
	}
}

// TestExecInheritEnv: the host environment reaches commands only with
// InheritEnv, and the backend's env still wins over it.
func TestExecInheritEnv(t *testing.T) {
	t.Setenv("AGENTBE_PROC_VAR", "proc")
	t.Setenv("AGENTBE_OVERRIDE", "proc")
	l := newExecLocal(t, LocalConfig{AllowDangerous: true, InheritEnv: true,
		Env: map[string]string{"AGENTBE_OVERRIDE": "backend"}})
	out, err := l.Exec(context.Background(), "echo $AGENTBE_PROC_VAR $AGENTBE_OVERRIDE", ExecOptions{})
	if err != nil || string(out) != "proc backend\n" {
		t.Fatalf("Exec = %q, %v", out, err)
	}
}

// jailHost returns the symlink-free host path of the workspace.
func (l *Local) jailHost(t *testing.T) string {
	t.Helper()
	_, host, err := l.jail.get()
	mustOK(t, err)
	return host
}

func TestExecErrors(t *testing.T) {
	ctx := context.Background()
	l := newExecLocal(t, LocalConfig{})
	mustOK(t, l.Write(ctx, "file", []byte("x")))

	for _, cmd := range []string{"", "   ", "\n\t"} {
		if _, err := l.Exec(ctx, cmd, ExecOptions{}); CodeOf(err) != CodeEmptyCommand || !errors.Is(err, ErrEmptyCommand) {
			t.Fatalf("Exec(%q): %v", cmd, err)
		}
	}
	_, err := l.Exec(ctx, "echo oops >&2; echo out; exit 7", ExecOptions{})
	var xe *ExitError
	if !errors.As(err, &xe) || xe.ExitCode != 7 || CodeOf(err) != CodeExecFailed {
		t.Fatalf("exit 7: %v", err)
	}
	if !strings.Contains(err.Error(), "oops") || string(xe.Stdout) != "out\n" {
		t.Fatalf("stderr not in error: %v / stdout %q", err, xe.Stdout)
	}
	_, err = l.Exec(ctx, "echo only-stdout; exit 1", ExecOptions{})
	if !strings.Contains(err.Error(), "only-stdout") {
		t.Fatalf("stdout fallback missing: %v", err)
	}
	for _, dir := range []string{"../", "missing", "file"} {
		if _, err := l.Exec(ctx, "pwd", ExecOptions{Dir: dir}); err == nil {
			t.Fatalf("Dir %q accepted", dir)
		}
	}
	if _, err := l.Exec(ctx, "pwd", ExecOptions{Dir: "../x"}); !errors.Is(err, ErrPathEscape) {
		t.Fatalf("Dir escape: %v", err)
	}
	// A working directory reached through a link out of the workspace.
	mustOK(t, os.Symlink(t.TempDir(), filepath.Join(l.jailHost(t), "out")))
	if _, err := l.Exec(ctx, "pwd", ExecOptions{Dir: "out"}); !errors.Is(err, ErrPathEscape) {
		t.Fatalf("Dir via link out: %v", err)
	}
}

func TestExecShellChoice(t *testing.T) {
	ctx := context.Background()
	l := newExecLocal(t, LocalConfig{Shell: ShellSh})
	if l.shell != "/bin/sh" {
		t.Fatalf("shell = %q", l.shell)
	}
	out, err := l.Exec(ctx, "echo sh", ExecOptions{})
	if err != nil || string(out) != "sh\n" {
		t.Fatalf("sh: %q %v", out, err)
	}
	if l2 := newExecLocal(t, LocalConfig{}); l2.shell != "/bin/bash" {
		t.Fatalf("auto shell = %q", l2.shell)
	}
}

func TestExecOutputLimit(t *testing.T) {
	ctx := context.Background()
	l := newExecLocal(t, LocalConfig{MaxOutputBytes: 10})
	out, err := l.Exec(ctx, "printf '0123456789abcdefghij'", ExecOptions{})
	mustOK(t, err)
	if !bytes.HasPrefix(out, []byte("0123456789\n\n")) || !strings.Contains(string(out), "Full output was 20 bytes") {
		t.Fatalf("truncated output = %q", out)
	}
	out, err = l.Exec(ctx, "printf short", ExecOptions{})
	if err != nil || string(out) != "short" {
		t.Fatalf("short output = %q %v", out, err)
	}
}

func TestExecStreaming(t *testing.T) {
	ctx := context.Background()
	l := newExecLocal(t, LocalConfig{})
	var stdout, stderr bytes.Buffer
	out, err := l.Exec(ctx, "echo a; echo b >&2", ExecOptions{Stdout: &stdout, Stderr: &stderr})
	if err != nil || out != nil || stdout.String() != "a\n" || stderr.String() != "b\n" {
		t.Fatalf("streamed: out=%q err=%v stdout=%q stderr=%q", out, err, stdout.String(), stderr.String())
	}
	// Output arrives while the command still runs.
	pr := newLineWaiter()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := l.Exec(cctx, "echo first; sleep 30", ExecOptions{Stdout: pr})
		done <- err
	}()
	select {
	case <-pr.got:
	case <-time.After(10 * time.Second):
		t.Error("no streamed output while the command runs")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v", err)
	}
}

type lineWaiter struct {
	got  chan struct{}
	once bool
}

func newLineWaiter() *lineWaiter { return &lineWaiter{got: make(chan struct{})} }

func (w *lineWaiter) Write(p []byte) (int, error) {
	if !w.once {
		w.once = true
		close(w.got)
	}
	return len(p), nil
}

// TestExecKillsProcessGroup: a timeout or cancel kills the shell and the
// processes it started.
func TestExecKillsProcessGroup(t *testing.T) {
	l := newExecLocal(t, LocalConfig{})
	for _, mode := range []string{"timeout", "cancel"} {
		t.Run(mode, func(t *testing.T) {
			pidFile := filepath.Join(l.jailHost(t), mode+".pid")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts := ExecOptions{}
			if mode == "timeout" {
				opts.Timeout = 300 * time.Millisecond
			} else {
				go func() {
					waitFile(t, pidFile)
					cancel()
				}()
			}
			_, err := l.Exec(ctx, "sleep 60 & echo $! > "+mode+".pid; wait", opts)
			want := context.Canceled
			if mode == "timeout" {
				want = context.DeadlineExceeded
			}
			if !errors.Is(err, want) {
				t.Fatalf("err = %v, want %v", err, want)
			}
			pid := readPid(t, pidFile)
			waitGone(t, pid)
		})
	}
}

func waitFile(t *testing.T, p string) {
	for i := 0; i < 500; i++ {
		if data, err := os.ReadFile(p); err == nil && len(data) > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readPid(t *testing.T, p string) int {
	t.Helper()
	waitFile(t, p)
	data, err := os.ReadFile(p)
	mustOK(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	mustOK(t, err)
	return pid
}

// waitGone polls until pid no longer exists (a zombie reaped by init counts
// as gone once it is no longer signalable).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(stat), ") Z ") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d still alive", pid)
}

func TestExecMemoryNotImplemented(t *testing.T) {
	m, err := NewMemory(MemoryConfig{})
	mustOK(t, err)
	_, err = m.Exec(context.Background(), "true", ExecOptions{})
	if !errors.Is(err, ErrNotImplemented) {
		t.Fatalf("memory exec: %v", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Op != "exec" || e.Backend != KindMemory {
		t.Fatalf("not-implemented error lacks op/backend: %#v", err)
	}
}

// TestExecCancelledBeforeStart: a context already done when the command
// would start gives the context's error, as a cancel during the run does
// (it was "cannot start command: context canceled", which errors.Is could
// not tell from a spawn failure).
func TestExecCancelledBeforeStart(t *testing.T) {
	l := ctLocal(t, LocalConfig{Isolation: IsolationSoftware})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := l.Exec(ctx, "true", ExecOptions{})
	if !errors.Is(err, context.Canceled) || CodeOf(err) != CodeExecFailed {
		t.Fatalf("Exec with a done context = %v (code %s)", err, CodeOf(err))
	}
}
