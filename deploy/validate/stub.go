package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// reportDir is where the stub, inside the simulated container, reads its
// instructions and writes what it saw.
const reportDir = "/agentbe-validate"

// StubName is the name under which the stub runs: the image's daemon
// binary is replaced by it. A test binary whose argv[0] has this base name
// calls StubMain instead of running tests.
const StubName = "agent-backend"

// stubControl is what the stub is asked to do besides recording.
type stubControl struct {
	// Daemon is the real daemon's path inside the container; "" records
	// only.
	Daemon string `json:"daemon"`
	// Probes are GETs on 127.0.0.1 inside the container, in order; each
	// is retried until it answers 200 or the deadline passes.
	Probes  []stubProbe `json:"probes"`
	Seconds int         `json:"seconds"` // the deadline of all probes
}

type stubProbe struct {
	Name string `json:"name"`
	Port int    `json:"port"`
	Path string `json:"path"`
}

// StubReport is what the stub saw: how it was started, and how the real
// daemon did when it was asked to start one.
type StubReport struct {
	Argv  []string     `json:"argv"`
	Env   []string     `json:"env"`
	Cwd   string       `json:"cwd"`
	Pid   int          `json:"pid"`
	Uid   int          `json:"uid"`
	Serve *ServeReport `json:"serve,omitempty"`
}

// ServeReport is the real daemon's run: each probe's last status and body,
// and its exit after SIGTERM.
type ServeReport struct {
	Probes map[string]ProbeResult `json:"probes"`
	// Exit is the daemon's exit status after SIGTERM (-1: killed or not
	// started).
	Exit int    `json:"exit"`
	Err  string `json:"err,omitempty"`
	Log  string `json:"log"`
}

// ProbeResult is a probe's last answer.
type ProbeResult struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
}

// StubMain records the stub's argv, environment, working directory and
// PID into reportDir/stub.json, then, when reportDir/control.json names
// a daemon, runs it with the same arguments and environment, probes it and
// stops it with SIGTERM. It returns the process's exit status.
func StubMain() int {
	rep := StubReport{Argv: os.Args, Env: os.Environ(), Pid: os.Getpid(), Uid: os.Getuid()}
	rep.Cwd, _ = os.Getwd()
	var ctl stubControl
	if b, err := os.ReadFile(filepath.Join(reportDir, "control.json")); err == nil {
		if err := json.Unmarshal(b, &ctl); err != nil {
			fmt.Fprintln(os.Stderr, "stub:", err)
			return 2
		}
	}
	if ctl.Daemon != "" {
		rep.Serve = serve(ctl)
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(reportDir, "stub.json"), b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "stub:", err)
		return 2
	}
	return 0
}

// lockedBuffer collects the daemon's output (capped) for the report.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serve runs the real daemon with the stub's own arguments and
// environment, as the entrypoint would have, and probes it.
func serve(ctl stubControl) *ServeReport {
	rep := &ServeReport{Probes: map[string]ProbeResult{}, Exit: -1}
	var log lockedBuffer
	cmd := exec.Command(ctl.Daemon, os.Args[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = os.Environ(), &log, &log
	if err := cmd.Start(); err != nil {
		rep.Err = err.Error()
		return rep
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(time.Duration(ctl.Seconds) * time.Second)
	client := &http.Client{Timeout: 10 * time.Second}
probes:
	for _, p := range ctl.Probes {
		url := "http://127.0.0.1:" + strconv.Itoa(p.Port) + p.Path
		for {
			if r, err := client.Get(url); err == nil {
				body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
				r.Body.Close()
				rep.Probes[p.Name] = ProbeResult{Status: r.StatusCode, Body: string(body)}
				if r.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-exited:
				rep.Err = "the daemon exited while being probed"
				break probes
			case <-time.After(200 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				rep.Err = "probe " + p.Name + " did not answer 200 in time"
				break probes
			}
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
	if cmd.ProcessState != nil {
		rep.Exit = cmd.ProcessState.ExitCode()
	}
	rep.Log = log.String()
	return rep
}
