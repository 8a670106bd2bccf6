package agentbe

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestExecCollectsBothStreams: output larger than a pipe buffer on stdout
// and stderr at once is collected whole (neither stream can stall the
// other), and the collected and streamed paths agree.
func TestExecCollectsBothStreams(t *testing.T) {
	ctx := context.Background()
	l := newExecLocal(t, LocalConfig{AllowDangerous: true})
	const cmd = `for i in $(seq 1 20000); do echo "out $i"; echo "err $i" >&2; done; exit 3`
	_, err := l.Exec(ctx, cmd, ExecOptions{})
	var xe *ExitError
	if !errors.As(err, &xe) || xe.ExitCode != 3 {
		t.Fatalf("err = %v, want exit 3", err)
	}
	var wantOut, wantErr strings.Builder
	for i := 1; i <= 20000; i++ {
		wantOut.WriteString("out " + strconv.Itoa(i) + "\n")
		wantErr.WriteString("err " + strconv.Itoa(i) + "\n")
	}
	if string(xe.Stdout) != wantOut.String() {
		t.Errorf("stdout: %d bytes, want %d", len(xe.Stdout), wantOut.Len())
	}
	if string(xe.Stderr) != wantErr.String() {
		t.Errorf("stderr: %d bytes, want %d", len(xe.Stderr), wantErr.Len())
	}
	var so, se bytes.Buffer
	_, err = l.Exec(ctx, cmd, ExecOptions{Stdout: &so, Stderr: &se})
	if !errors.As(err, &xe) || so.String() != wantOut.String() || se.String() != wantErr.String() {
		t.Fatalf("streamed: err %v, %d/%d bytes", err, so.Len(), se.Len())
	}
}

// TestExecOutputOutlivesShell: a background process that keeps stdout open
// after the shell exits ends the Exec once the grace period (WaitDelay) is
// over, with the error os/exec gives for it.
func TestExecOutputOutlivesShell(t *testing.T) {
	ctx := context.Background()
	l := newExecLocal(t, LocalConfig{AllowDangerous: true})
	_, err := l.Exec(ctx, "sleep 30 & echo $! > bg.pid", ExecOptions{})
	pid := readPid(t, filepath.Join(l.jailHost(t), "bg.pid"))
	defer waitGone(t, pid)
	defer syscall.Kill(pid, syscall.SIGKILL)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeExecError || !strings.Contains(err.Error(), "WaitDelay") {
		t.Fatalf("err = %v, want EXEC_ERROR after WaitDelay", err)
	}
}

// TestExecShellVariable: SHELL is the backend's shell unless the
// environment is inherited, and Env can set it.
func TestExecShellVariable(t *testing.T) {
	ctx := context.Background()
	t.Setenv("SHELL", "/host/shell")
	l := newExecLocal(t, LocalConfig{Shell: ShellSh})
	if out, err := l.Exec(ctx, `echo "$SHELL"`, ExecOptions{}); err != nil || string(out) != "/bin/sh\n" {
		t.Fatalf("SHELL = %q, %v", out, err)
	}
	if out, err := l.Exec(ctx, `echo "$SHELL"`, ExecOptions{Env: map[string]string{"SHELL": "/x"}}); err != nil || string(out) != "/x\n" {
		t.Fatalf("SHELL from Env = %q, %v", out, err)
	}
	li := newExecLocal(t, LocalConfig{Shell: ShellSh, InheritEnv: true})
	if out, err := li.Exec(ctx, `echo "$SHELL"`, ExecOptions{}); err != nil || string(out) != "/host/shell\n" {
		t.Fatalf("inherited SHELL = %q, %v", out, err)
	}
}
