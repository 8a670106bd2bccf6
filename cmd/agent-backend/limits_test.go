package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/cgroup"
	"github.com/agentbe/agent-backend/internal/testenv"
)

// requireLimits skips (fails under CI) unless bwrap and writable cgroups
// are here.
func requireLimits(t testing.TB) {
	t.Helper()
	_, err := exec.LookPath("bwrap")
	testenv.Require(t, err == nil, "bwrap")
	m, err := cgroup.Host()
	ok := err == nil && m.Check(cgroup.Limits{MemoryBytes: 64 << 20, Pids: 32, CPU: 0.5}) == nil
	testenv.Require(t, ok, fmt.Sprintf("writable cgroups with memory, pids and cpu (%v)", err))
}

// execTool calls the exec tool with args and returns its text and
// whether it is an error result.
func execTool(t *testing.T, d *daemonProc, args map[string]any) (string, bool) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "exec", "arguments": args}})
	status, body := d.mcp(t, string(b))
	if status != 200 {
		t.Fatalf("exec %v: %d %s", args, status, body)
	}
	// The answer may come as one SSE event.
	if i := strings.Index(body, "data: "); i >= 0 {
		body = strings.TrimSpace(body[i+len("data: "):])
	}
	var resp struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
			IsError bool                    `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || len(resp.Result.Content) == 0 {
		t.Fatalf("exec %v: %s", args, body)
	}
	return resp.Result.Content[0].Text, resp.Result.IsError
}

// TestDaemonExecLimits runs the real binary with every --exec-* flag: a
// 1 GiB allocation, a fork loop and a sleep past the time limit are each
// stopped with LIMIT_EXCEEDED naming the limit, the MCP timeout can only
// shorten the operator's, commands reach no network, and the daemon
// serves on through all of it.
func TestDaemonExecLimits(t *testing.T) {
	requireLimits(t)
	// (--exec-cpu is left to the library's tests: a CPU quota slows the
	// other cases down on a loaded machine.)
	d, _ := startDaemonBinary(t, cliBinary(t), "--isolation", "bwrap", "--exec-memory", "64M", "--exec-pids", "32",
		"--exec-timeout", "3s", "--exec-network", "none")
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(d.port) + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var health struct {
		ResourceLimits bool `json:"resourceLimits"`
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if json.Unmarshal(b, &health) != nil || !health.ResourceLimits {
		t.Fatalf("/health does not say limits are in force: %s", b)
	}
	cases := []struct {
		args map[string]any
		want string
	}{
		// perl (in every Debian) touches the whole GiB at once.
		{map[string]any{"command": `perl -e 'vec($x, (1<<30)-1, 8) = 1; print length $x'`},
			"LIMIT_EXCEEDED: memory limit exceeded (64 MiB per command); the command was stopped"},
		{map[string]any{"command": "for i in {1..200}; do sleep 60 & done; wait"},
			"LIMIT_EXCEEDED: processes limit exceeded (32 per command); the command was stopped"},
		{map[string]any{"command": "sleep 30"},
			"LIMIT_EXCEEDED: time limit exceeded (3s per command); the command was stopped"},
		{map[string]any{"command": "while :; do :; done"},
			"LIMIT_EXCEEDED: time limit exceeded (3s per command); the command was stopped"},
		{map[string]any{"command": "sleep 30", "timeout": 0.5},
			"LIMIT_EXCEEDED: time limit exceeded (timeout 0.5s); the command was stopped"},
		// A longer timeout does not lengthen the operator's limit.
		{map[string]any{"command": "sleep 30", "timeout": 100},
			"LIMIT_EXCEEDED: time limit exceeded (3s per command); the command was stopped"},
	}
	for _, c := range cases {
		text, isErr := execTool(t, d, c.args)
		if !isErr || !strings.HasSuffix(text, c.want) {
			t.Errorf("%v: %q (error %v), want it to end with %q", c.args, text, isErr, c.want)
		}
	}
	// --exec-network none: not even the daemon's own port.
	probe := fmt.Sprintf(`if (exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null; then echo reached; else echo unreachable; fi`, d.port)
	if text, _ := execTool(t, d, map[string]any{"command": "bash -c '" + probe + "'"}); text != "unreachable" {
		t.Errorf("network none: %q", text)
	}
	if text, isErr := execTool(t, d, map[string]any{"command": "echo still here"}); isErr || text != "still here" {
		t.Fatalf("after the limits: %q", text)
	}
	select {
	case <-d.exited:
		t.Fatalf("the daemon died: %v\n%s", d.exitErr, d.stderr.String())
	default:
	}
}

// TestDaemonExitsOnUnenforceableLimits: limits that cannot be enforced
// stop the daemon at start (exit 1, the reason on stderr).
func TestDaemonExitsOnUnenforceableLimits(t *testing.T) {
	bin := cliBinary(t)
	run := func(t *testing.T, argv ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(argv[0], argv[1:]...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatal("the daemon started")
		}
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	daemonArgs := func(extra ...string) []string {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		return append([]string{"daemon", "--rootDir", t.TempDir(), "--host", "127.0.0.1", "--port", strconv.Itoa(port),
			"--ssh-host-key", t.TempDir() + "/key"}, extra...)
	}
	t.Run("network none without bwrap", func(t *testing.T) {
		code, stderr := run(t, append([]string{bin}, daemonArgs("--isolation", "software", "--exec-network", "none")...)...)
		if code != 1 || !strings.Contains(stderr, "network mode none needs the bwrap isolation mode") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
	t.Run("no cgroup file system", func(t *testing.T) {
		bwrap, err := exec.LookPath("bwrap")
		testenv.Require(t, err == nil, "bwrap")
		// The daemon runs where /sys/fs/cgroup is an empty tmpfs.
		argv := append([]string{bwrap, "--dev-bind", "/", "/", "--tmpfs", "/sys/fs/cgroup", bin},
			daemonArgs("--isolation", "none", "--exec-memory", "1G")...)
		code, stderr := run(t, argv...)
		if code != 1 || !strings.Contains(stderr, "resource limits cannot be enforced") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
}
