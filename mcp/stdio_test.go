package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitGoroutines fails the test if the goroutine count does not come back
// to at most base within a few seconds.
func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutines: %d > %d\n%s", n, base, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestServeStdioSequence(t *testing.T) {
	base := runtime.NumGoroutine()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		``,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}` + "\r",
		`not json`,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, // last line without newline
	}, "\n")
	var out bytes.Buffer
	if err := ServeStdio(context.Background(), protoServer(), strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("got %d lines:\n%s", len(lines), out.String())
	}
	seen := map[string]bool{}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("invalid line %q", l)
		}
		switch {
		case strings.HasPrefix(l, "["):
			seen["batch"] = true
		case strings.Contains(l, `"protocolVersion":"2025-06-18"`):
			seen["init"] = true
		case strings.Contains(l, `"text":"hi"`):
			seen["echo"] = true
		case strings.Contains(l, `-32700`):
			seen["parse"] = true
		case strings.Contains(l, `"tools":[`):
			seen["list"] = true
		}
	}
	if len(seen) != 5 {
		t.Fatalf("missing responses, saw %v:\n%s", seen, out.String())
	}
	waitGoroutines(t, base)
}

// TestServeStdioConcurrent checks that a slow request does not hold up a
// later fast one, and that EOF waits for the slow one to be answered.
func TestServeStdioConcurrent(t *testing.T) {
	base := runtime.NumGoroutine()
	release := make(chan struct{})
	s := protoServer(testTool{Tool{Name: "gate"}, func(ctx context.Context, _ json.RawMessage) (*CallToolResult, error) {
		<-release
		return TextResult("gate done"), nil
	}})
	pr, pw := io.Pipe()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() { errc <- ServeStdio(context.Background(), s, pr, outW); outW.Close() }()
	sc := bufio.NewScanner(outR)
	io.WriteString(pw, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gate"}}`+"\n")
	io.WriteString(pw, `{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
	if !sc.Scan() || !strings.Contains(sc.Text(), `"id":2`) {
		t.Fatalf("first answer should be the ping, got %q", sc.Text())
	}
	pw.Close() // EOF while the gate call is in flight
	close(release)
	if !sc.Scan() || !strings.Contains(sc.Text(), "gate done") {
		t.Fatalf("in-flight call not answered after EOF: %q", sc.Text())
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, base)
}

func TestServeStdioCancel(t *testing.T) {
	base := runtime.NumGoroutine()
	cancelled := make(chan struct{})
	s := protoServer(testTool{Tool{Name: "slow"}, func(ctx context.Context, _ json.RawMessage) (*CallToolResult, error) {
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}})
	in := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}` + "\n"
	var out syncBuffer
	if err := ServeStdio(context.Background(), s, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cancelled:
	default:
		t.Fatal("tool context not cancelled")
	}
	if out.String() != "" {
		t.Fatalf("cancelled request was answered: %s", out.String())
	}
	waitGoroutines(t, base)
}

func TestServeStdioContextDone(t *testing.T) {
	started := make(chan struct{})
	s := protoServer(testTool{Tool{Name: "slow"}, func(ctx context.Context, _ json.RawMessage) (*CallToolResult, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- ServeStdio(ctx, s, pr, io.Discard) }()
	io.WriteString(pw, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`+"\n")
	<-started
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Fatalf("err = %v", err)
	}
}

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestServeStdioWriteError(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	errc := make(chan error, 1)
	go func() { errc <- ServeStdio(context.Background(), protoServer(), pr, errWriter{}) }()
	io.WriteString(pw, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
	select {
	case err := <-errc:
		if err != io.ErrClosedPipe {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not stop on a write error")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
