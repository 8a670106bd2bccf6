package agentbe_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// TestGrepBoundedAndCancellable: a search over its time or output bound
// stops, keeps what it found and says so; a cancelled one stops too.
func TestGrepBoundedAndCancellable(t *testing.T) {
	ctx := context.Background()
	l, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: t.TempDir()})
	must(t, err)
	defer l.Destroy(ctx)
	for i := range 300 {
		must(t, l.Write(ctx, fmt.Sprintf("d/%03d.txt", i), []byte(strings.Repeat("match line\n", 50))))
	}
	res, err := agentbe.Grep(ctx, l, agentbe.GrepOptions{Pattern: "match", OutputMode: "content", MaxOutputBytes: 4096})
	if err != nil || res.Stopped == "" || !strings.Contains(res.Text, "[stopped early: ") || len(res.Text) > 8192 {
		t.Fatalf("output bound: stopped %q, %d bytes, %v", res.Stopped, len(res.Text), err)
	}
	res, err = agentbe.Grep(ctx, l, agentbe.GrepOptions{Pattern: "match", MaxFiles: 10})
	if err != nil || res.Stopped == "" || res.Searched > 10 {
		t.Fatalf("file bound: %+v %v", res.Stopped, err)
	}
	res, err = agentbe.Grep(ctx, l, agentbe.GrepOptions{Pattern: "match", Timeout: time.Nanosecond})
	if err == nil && res.Stopped == "" {
		t.Fatalf("time bound: complete answer %d files", len(res.Files))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	res, err = agentbe.Grep(cctx, l, agentbe.GrepOptions{Pattern: "match"})
	if err == nil && res.Stopped == "" {
		t.Fatalf("cancelled search answered in full: %d files", len(res.Files))
	}
}

// must fails the test on a non-nil error.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
