package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/mcp"
	"golang.org/x/crypto/ssh"
)

// TestSSHPanicsRecoveredLoggedCounted: a panic while a session handles a
// request, or in the work it started, ends that session only (the work's
// with exit status 1), is logged at ERROR with its stack and counted; the
// connection and the daemon keep serving.
func TestSSHPanicsRecoveredLoggedCounted(t *testing.T) {
	d := startDaemon(t, Config{})
	hook := func(point string) {
		switch point {
		case "request env":
			panic("env boom")
		case "run exec":
			panic("exec boom")
		}
	}
	d.testHook.Store(&hook)
	c := sshClient(t, d, "", "")

	// A panic in the work: the client gets exit status 1.
	_, err := runSSH(t, c, "echo hi", "")
	var xe *ssh.ExitError
	if !errors.As(err, &xe) || xe.ExitStatus() != 1 || !strings.Contains(err.Error(), "internal error") {
		t.Fatalf("exec whose work panicked: %v", err)
	}
	// A panic handling a request: that session ends.
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	s.Setenv("A", "b")
	if err := s.Run("echo hi"); err == nil {
		t.Fatal("session whose request handling panicked still ran a command")
	}
	s.Close()
	if n := d.RecoveredPanics(); n != 2 {
		t.Fatalf("RecoveredPanics = %d, want 2", n)
	}
	d.testHook.Store(nil)
	if out, err := runSSH(t, c, "echo still", ""); err != nil || out != "still\n" {
		t.Fatalf("connection after the panics: %q, %v", out, err)
	}
	log := d.log.String()
	for _, want := range []string{
		`level=ERROR msg="daemon: recovered panic" where="SSH session work" panic="exec boom" stack=`,
		`level=ERROR msg="daemon: recovered panic" where="SSH session" panic="env boom" stack=`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
	if !strings.Contains(log, "panics_test.go") {
		t.Errorf("stack does not name the panicking function:\n%s", log)
	}
}

// TestMCPToolPanicLoggedCounted: the MCP servers of /mcp report a tool's
// panic to the daemon, which logs it with its stack and counts it.
func TestMCPToolPanicLoggedCounted(t *testing.T) {
	d := startDaemon(t, Config{DisableSSHWS: true})
	boom := mcp.NewToolSet(mcp.Tool{Name: "boom", InputSchema: json.RawMessage(`{"type":"object"}`)})
	for range 2 {
		srv := mcp.NewServer(mcp.Implementation{Name: "t", Version: "1"}, d.mcpOptions().ServerOptions, boom,
			func(context.Context, mcp.ToolCall) (*mcp.CallToolResult, error) { panic("tool boom") })
		out := srv.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"boom"}}`))
		if !strings.Contains(string(out), "Internal error: tool boom panicked") {
			t.Fatal(string(out))
		}
	}
	if n := d.RecoveredPanics(); n != 2 {
		t.Fatalf("RecoveredPanics = %d, want 2", n)
	}
	log := d.log.String()
	if !strings.Contains(log, `level=ERROR msg="daemon: recovered panic" where="MCP tool boom" panic="tool boom" stack=`) ||
		!strings.Contains(log, "panics_test.go") {
		t.Fatalf("log:\n%s", log)
	}
}
