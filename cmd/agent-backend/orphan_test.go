package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// startExec posts an MCP exec of command to d without waiting for it: the
// answer never comes when the daemon is killed.
func startExec(d *daemonProc, command string) {
	go func() {
		body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"command":"` + command + `"}}}`
		req, _ := http.NewRequest("POST", "http://127.0.0.1:"+strconv.Itoa(d.port)+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer s3cret-token-of-the-cli-tests-0123")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
}

// waitMarked waits until a process carrying marker satisfies ok.
func waitMarked(t *testing.T, marker string, ok func(procs []string) bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(testenv.ProcessesWith(marker)); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no process %q: %q", marker, testenv.ProcessesWith(marker))
		}
	}
}

// waitUnmarked fails t unless every process carrying marker is gone within
// 10 s.
func waitUnmarked(t *testing.T, marker string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if left = testenv.ProcessesWith(marker); len(left) == 0 {
			return
		}
	}
	for _, p := range left { // leave nothing behind on the machine
		pid, _, _ := strings.Cut(p, ":")
		if n, err := strconv.Atoi(pid); err == nil {
			syscall.Kill(n, syscall.SIGKILL)
		}
	}
	t.Errorf("the daemon is gone, its command is not: %q", left)
}

func killDaemon(t *testing.T, d *daemonProc, sig syscall.Signal) {
	t.Helper()
	d.cmd.Process.Signal(sig)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the daemon did not exit on %v", sig)
	}
}

func hasSleep(procs []string) bool {
	for _, p := range procs {
		if _, argv, _ := strings.Cut(p, ": "); strings.HasPrefix(argv, "sleep ") {
			return true
		}
	}
	return false
}

// TestDaemonDeathEndsSandboxedCommands runs the real binary under bwrap,
// starts a sandboxed sleep through MCP and ends the daemon: with SIGTERM
// (a graceful shutdown kills what runs) and with SIGKILL (nothing of the
// daemon runs any more: the kernel's parent-death signal must end the
// sandbox). The sleep must be gone either way.
func TestDaemonDeathEndsSandboxedCommands(t *testing.T) {
	_, err := exec.LookPath("bwrap")
	testenv.Require(t, err == nil, "bwrap")
	bin := cliBinary(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			d, _ := startDaemonBinary(t, bin, "--isolation", "bwrap")
			marker := testenv.SleepMarker()
			startExec(d, "sleep "+marker)
			waitMarked(t, marker, hasSleep)
			killDaemon(t, d, sig)
			waitUnmarked(t, marker)
		})
	}
}

// TestDaemonKilledWhileSandboxStarts kills the daemon (SIGKILL) while bwrap
// is still starting, before bwrap itself asks for the parent-death signal:
// a bwrap on PATH that waits a moment before running the real one stands
// for that window. The launch must carry the parent-death signal from the
// fork on, or the sandbox runs its command with no daemon left.
func TestDaemonKilledWhileSandboxStarts(t *testing.T) {
	real, err := exec.LookPath("bwrap")
	testenv.Require(t, err == nil, "bwrap")
	bin := cliBinary(t)
	marker := testenv.SleepMarker()
	dir := t.TempDir()
	stalled := filepath.Join(dir, "stalled")
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\ncase \"$*\" in *" + marker + "*) : >" + stalled + "; " + sleep + " 2 ;; esac\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "bwrap"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	d, _ := startDaemonBinary(t, bin, "--isolation", "bwrap")
	startExec(d, "sleep "+marker)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(stalled); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox never started\n%s", d.stderr)
		}
	}
	killDaemon(t, d, syscall.SIGKILL)
	time.Sleep(2500 * time.Millisecond) // past the stall: a surviving launch now runs the real bwrap
	waitUnmarked(t, marker)
}
