package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	agentbe "github.com/agentbe/agent-backend"
)

func TestParseTSFileOp(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want tsFileOp
		ok   bool
	}{
		{`rm "/w/a"`, tsFileOp{op: "rm", path: "/w/a"}, true},
		{`rm -r "/w/a b"`, tsFileOp{op: "rm", path: "/w/a b", recursive: true}, true},
		{`rm -r -f "/w/a"`, tsFileOp{op: "rm", path: "/w/a", recursive: true, force: true}, true},
		{`rm -f "/w/a"`, tsFileOp{op: "rm", path: "/w/a", force: true}, true},
		{`mkdir -p "/w/x/y"`, tsFileOp{op: "mkdir", path: "/w/x/y"}, true},
		{`rm -rf "/w/a"`, tsFileOp{}, false},
		{`rm -r "/w/$(id)"`, tsFileOp{}, false},
		{"rm -r \"/w/`id`\"", tsFileOp{}, false},
		{`rm -r "/w/a" "/w/b"`, tsFileOp{}, false},
		{`rm -r "/w/a"; id`, tsFileOp{}, false},
		{`rm -r ""`, tsFileOp{}, false},
		{`mkdir "/w/x"`, tsFileOp{}, false},
		{`rm -r "/w/a\"b"`, tsFileOp{}, false},
	} {
		got, ok := parseTSFileOp(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%q: %+v %v", tc.in, got, ok)
		}
	}
}

func FuzzParseTSFileOp(f *testing.F) {
	for _, s := range []string{`rm -r -f "/a"`, `mkdir -p "/a/b"`, `rm "x"`, `rm -r "$(x)"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		op, ok := parseTSFileOp(s)
		if ok && (op.path == "" || len(op.path) >= len(s)) {
			t.Fatalf("%q → %+v", s, op)
		}
	})
}

// TestTSFileOpsStayJailed: the operations go through the backend, so a
// path leaving the workspace (or through a link out of it) fails and
// nothing outside changes.
func TestTSFileOpsStayJailed(t *testing.T) {
	ctx := context.Background()
	ws, canary := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(canary, "keep"), []byte("x"), 0o644)
	os.Symlink(canary, filepath.Join(ws, "out"))
	l, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: ws, Isolation: agentbe.IsolationNone})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Destroy(ctx)
	for _, op := range []tsFileOp{
		{op: "rm", path: filepath.Join(ws, "../..", canary), recursive: true, force: true},
		{op: "rm", path: filepath.Join(ws, "out/keep"), force: true},
		{op: "rm", path: canary, recursive: true},
	} {
		op.run(ctx, l)
	}
	if _, err := os.Stat(filepath.Join(canary, "keep")); err != nil {
		t.Fatal("a file outside the workspace was removed")
	}
	if err := (tsFileOp{op: "mkdir", path: filepath.Join(ws, "a/b")}).run(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := (tsFileOp{op: "rm", path: filepath.Join(ws, "a"), recursive: true}).run(ctx, l); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Error("rm -r did not remove")
	}
	if err := (tsFileOp{op: "rm", path: filepath.Join(ws, "gone"), force: true}).run(ctx, l); err != nil {
		t.Errorf("rm -f of a missing file: %v", err)
	}
	if err := (tsFileOp{op: "rm", path: filepath.Join(ws, "gone")}).run(ctx, l); err == nil {
		t.Error("rm of a missing file succeeded")
	}
}
