package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
	"github.com/agentbe/agent-backend/mcp"
)

// pipeRWC joins the daemon's stdout (read side) and stdin (write side).
type pipeRWC struct {
	io.Reader
	io.WriteCloser
}

// startLocalOnly runs `daemon --local-only` in process on pipes and returns
// a client; the daemon exits when the client closes stdin.
func startLocalOnly(t *testing.T, args ...string) *mcp.Client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := runDaemon(append([]string{"--local-only"}, args...), inR, outW, io.Discard)
		outW.Close()
		done <- code
	}()
	c := mcp.NewStreamClient(pipeRWC{outR, inW}, mcp.ClientOptions{Info: mcp.Implementation{Name: "test", Version: "1"}})
	t.Cleanup(func() {
		c.Close()
		inW.Close()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("daemon exit code %d", code)
			}
		case <-time.After(10 * time.Second):
			t.Error("daemon did not exit after stdin closed")
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func callText(t *testing.T, c *mcp.Client, tool string, args any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, tool, args)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res.Content[0].Text, res.IsError
}

func TestLocalOnlyServesTools(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644)
	c := startLocalOnly(t, "--rootDir", root, "--isolation", "none")
	tools, err := c.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 16 || tools[15].Name != "grep" {
		t.Errorf("%d tools, want 14 filesystem tools, exec and grep", len(tools))
	}
	if got, _ := callText(t, c, "read_text_file", map[string]any{"path": "/a.txt"}); got != "hello\n" {
		t.Errorf("read_text_file: %q", got)
	}
	// Local-only mode does not block dangerous commands (docs/daemon.md).
	if got, isErr := callText(t, c, "exec", map[string]any{"command": "echo 'rm -rf /' | cat"}); isErr || got != "rm -rf /" {
		t.Errorf("exec: %q (error %v)", got, isErr)
	}
}

func TestLocalOnlyScopePath(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "users", "u1"), 0o755)
	os.WriteFile(filepath.Join(root, "top.txt"), []byte("top\n"), 0o644)
	c := startLocalOnly(t, "--rootDir", root, "--scopePath", "/users/u1", "--isolation", "none")
	want := "Allowed directories:\n" + filepath.Join(root, "users", "u1")
	if got, _ := callText(t, c, "list_allowed_directories", map[string]any{}); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, isErr := callText(t, c, "read_text_file", map[string]any{"path": "../../top.txt"}); !isErr || strings.Contains(got, "top\n") {
		t.Errorf("read outside the scope: %q", got)
	}
	if got, _ := callText(t, c, "write_file", map[string]any{"path": "/f.txt", "content": "x"}); got != "Successfully wrote to /f.txt" {
		t.Errorf("write_file: %q", got)
	}
	if _, err := os.Stat(filepath.Join(root, "users", "u1", "f.txt")); err != nil {
		t.Errorf("file not written in the scope: %v", err)
	}
	if got, _ := callText(t, c, "exec", map[string]any{"command": "pwd"}); got != filepath.Join(root, "users", "u1") {
		t.Errorf("exec runs in %q", got)
	}
}

// processRunning reports whether a process carrying marker (a
// testenv.SleepMarker the test put in its argv) is alive.
func processRunning(marker string) bool { return len(testenv.ProcessesWith(marker)) > 0 }

// TestLocalOnlyExitsWhenStdinCloses: closing stdin ends the daemon promptly
// even while an exec runs, and the command is killed.
func TestLocalOnlyExitsWhenStdinCloses(t *testing.T) {
	token := testenv.SleepMarker()
	inR, inW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- runDaemon([]string{"--local-only", "--rootDir", t.TempDir(), "--isolation", "none"}, inR, io.Discard, io.Discard)
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"command":"sleep `+token+`"}}}
`)
	deadline := time.Now().Add(10 * time.Second)
	for !processRunning(token) {
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	inW.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("daemon still running 10 s after stdin closed")
	}
	for processRunning(token) {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("the command survived the daemon")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
