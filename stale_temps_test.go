package agentbe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRemoveStaleTemps: only regular files named exactly as atomic writes
// name their temporary files, and older than the cut-off, are removed; no
// link is followed (a canary outside the workspace, reached through a
// link, keeps its files), and the scan stops at MaxEntries.
func TestRemoveStaleTemps(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	canary := t.TempDir()
	old := time.Now().Add(-time.Hour)
	mk := func(dir, name string, mtime time.Time) string {
		t.Helper()
		p := filepath.Join(dir, name)
		mustOK(t, os.MkdirAll(filepath.Dir(p), 0o755))
		mustOK(t, os.WriteFile(p, []byte("partial"), 0o644))
		mustOK(t, os.Chtimes(p, mtime, mtime))
		return p
	}
	stale := []string{
		mk(root, ".a.txt.0123456789abc.tmp", old),
		mk(root, "deep/er/.b.0000000000001.tmp", old),
	}
	kept := []string{
		mk(root, ".fresh.0123456789abc.tmp", time.Now()), // a writer may still be at work
		mk(root, ".a.123.tmp", old),
		mk(root, "a.0123456789abc.tmp", old),
		mk(root, ".a.0123456789ABC.tmp", old),
		mk(root, "notes.tmp", old),
		mk(canary, ".c.0123456789abc.tmp", old),
		mk(canary, "sub/.d.0123456789abc.tmp", old),
	}
	mustOK(t, os.Symlink(canary, filepath.Join(root, "out")))
	mustOK(t, os.Symlink(filepath.Join(canary, ".c.0123456789abc.tmp"), filepath.Join(root, ".l.0123456789abc.tmp")))
	mustOK(t, os.Mkdir(filepath.Join(root, ".dir.0123456789abc.tmp"), 0o755))

	l, err := NewLocal(LocalConfig{RootDir: root})
	mustOK(t, err)
	defer l.Destroy(ctx)
	res, err := l.RemoveStaleTemps(ctx, StaleTempOptions{})
	mustOK(t, err)
	if res.Removed != len(stale) || res.Truncated {
		t.Errorf("result %+v, want %d removed", res, len(stale))
	}
	for _, p := range stale {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s: still there (%v)", p, err)
		}
	}
	for _, p := range append(kept, filepath.Join(root, ".l.0123456789abc.tmp"), filepath.Join(root, ".dir.0123456789abc.tmp")) {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: removed (%v)", p, err)
		}
	}

	// The scan is bounded.
	for i := 0; i < 50; i++ {
		mk(root, "many/"+strings.Repeat("f", i+1), time.Now())
	}
	mk(root, "many/.z.0123456789abc.tmp", old)
	res, err = l.RemoveStaleTemps(ctx, StaleTempOptions{MaxEntries: 10})
	mustOK(t, err)
	if !res.Truncated || res.Scanned > 10 {
		t.Errorf("bounded scan: %+v", res)
	}
	// A cancelled context stops it.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.RemoveStaleTemps(cctx, StaleTempOptions{}); err == nil {
		t.Error("cancelled scan: no error")
	}
	// A destroyed backend refuses.
	mustOK(t, l.Destroy(ctx))
	if _, err := l.RemoveStaleTemps(ctx, StaleTempOptions{}); err == nil {
		t.Error("destroyed backend: no error")
	}
}
