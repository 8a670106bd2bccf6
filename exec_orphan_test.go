package agentbe

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// waitNoMarked polls until no live process carries marker, and fails t with
// the ones left after 10 s (the kernel reaps killed processes
// asynchronously).
func waitNoMarked(t *testing.T, marker string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if left = testenv.ProcessesWith(marker); len(left) == 0 {
			return
		}
	}
	t.Errorf("processes left behind: %q", left)
}

// TestBwrapCancelDuringSandboxSetup cancels commands while bwrap is still
// setting up the sandbox: its init has left bwrap's process group
// (--new-session) but not yet bound its death to bwrap's. Killing bwrap's
// group alone left the init orphaned (parent PID 1) to run the command to
// its end. Nothing may be left.
func TestBwrapCancelDuringSandboxSetup(t *testing.T) {
	l := newIsoLocal(t, "", IsolationBwrap, false)
	for range 10 {
		marker := testenv.SleepMarker()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := l.Exec(ctx, "sleep "+marker, ExecOptions{})
			done <- err
		}()
		waitSandboxInit(t, marker)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Exec = %v, want context.Canceled", err)
		}
		waitNoMarked(t, marker)
	}
}

// waitSandboxInit returns once the sandbox's init, started by the outer
// bwrap of the command carrying marker (a child of this process), has
// become a session leader (or is gone).
func waitSandboxInit(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	outer := ""
	for outer == "" {
		if time.Now().After(deadline) {
			t.Fatal("the sandbox never started")
		}
		for _, p := range testenv.ProcessesWith(marker) {
			pid, _, _ := strings.Cut(p, ":")
			st, _ := os.ReadFile("/proc/" + pid + "/stat")
			if f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:])); len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
				outer = pid
			}
		}
	}
	init := ""
	for init == "" {
		if time.Now().After(deadline) {
			t.Fatal("the sandbox's init never started")
		}
		b, err := os.ReadFile("/proc/" + outer + "/task/" + outer + "/children")
		if err != nil {
			return
		}
		init, _, _ = strings.Cut(strings.TrimSpace(string(b)), " ")
	}
	for time.Now().Before(deadline) {
		st, err := os.ReadFile("/proc/" + init + "/stat")
		if err != nil {
			return
		}
		// Fields after the command name: state, ppid, pgrp, session.
		if f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:])); len(f) > 3 && f[3] == init {
			return
		}
	}
}

// TestExecSurvivesThreadExit: a command's parent, for the kernel, is the
// thread that forked it. Go ends a thread when a goroutine locked to it
// exits; the parent-death signal (bwrap's --die-with-parent, Pdeathsig)
// then fired while the process lived on, killing the command (and, in a
// sandbox still being set up, orphaning it). Commands must run to their end
// however many threads come and go.
func TestExecSurvivesThreadExit(t *testing.T) {
	for _, iso := range []Isolation{IsolationNone, IsolationBwrap} {
		t.Run(string(iso), func(t *testing.T) {
			l := newIsoLocal(t, "", iso, false)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // retire threads all along
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					var w sync.WaitGroup
					for range 8 {
						w.Add(1)
						go func() { defer w.Done(); runtime.LockOSThread() }()
					}
					w.Wait()
					time.Sleep(time.Millisecond)
				}
			}()
			defer func() { close(stop); wg.Wait() }()
			for range 3 {
				out, err := l.Exec(context.Background(), "sleep 0.5; echo done", ExecOptions{})
				if err != nil || strings.TrimSpace(string(out)) != "done" {
					t.Fatalf("Exec: %q %v", out, err)
				}
			}
		})
	}
}
