package migrate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/sftpjail"
)

// servedConn serves dir over an in-process SFTP session.
func servedConn(t *testing.T, shard, dir string) *Conn {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	cs, ss := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sftpjail.Serve(ss, root, nil)
		ss.Close()
	}()
	c, err := sftpjail.NewClient(cs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		<-done
		root.Close()
	})
	return &Conn{Shard: shard, SFTP: c}
}

// A run cancelled while a rename is in flight cannot know from the reply
// whether the server placed the file; it asks, so that what it reports as
// copied is what the destination holds (the next run then verifies the
// file without copying it, and the two runs' counts add up).
func TestCancelledRenameCounted(t *testing.T) {
	for _, at := range []string{"f00", "f05", "f11"} {
		t.Run(at, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			dir := filepath.Join(src, "tenants", "k")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for i := range 12 {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", i)), []byte(strings.Repeat("x", i*1000)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			conns := map[string]*Conn{"a": servedConn(t, "a", src), "b": servedConn(t, "b", dst)}
			mg, err := Open(Options{Conn: func(_ context.Context, shard string) (*Conn, error) { return conns[shard], nil }})
			if err != nil {
				t.Fatal(err)
			}
			defer mg.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			RenameHook = func(_ Move, rel string) {
				if rel == at {
					cancel()
				}
			}
			defer func() { RenameHook = nil }()
			res := mg.Tenant(ctx, Move{Key: "k", Scope: "tenants/k", From: "a", To: "b"})
			if !errors.Is(res.Err, context.Canceled) {
				t.Fatalf("cancelled run: %v", res.Err)
			}
			placed := 0
			entries, err := os.ReadDir(filepath.Join(dst, "tenants", "k"))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), TempPrefix) {
					t.Errorf("temporary file %s left", e.Name())
				} else if e.Type().IsRegular() {
					placed++
				}
			}
			if placed != res.CopiedFiles {
				t.Errorf("the destination holds %d files, the run reports %d copied", placed, res.CopiedFiles)
			}
		})
	}
}
