//go:build linux

package agentbe_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/testenv"
	"github.com/agentbe/agent-backend/internal/watchtest"
)

const watchTimeout = watchtest.Timeout

var (
	until   = watchtest.Until
	changed = watchtest.Changed
	watchOf = watchtest.Open
)

func newWatchLocal(t *testing.T) *agentbe.Local {
	t.Helper()
	l, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: t.TempDir(), Isolation: agentbe.IsolationSoftware})
	must(t, err)
	t.Cleanup(func() { l.Destroy(context.Background()) })
	return l
}

// TestWatchLocalSurfaces: changes made through the library, the host
// itself, a command run in the workspace and an MCP tool all appear, with
// paths relative to the workspace, every event kind included.
func TestWatchLocalSurfaces(t *testing.T) {
	ctx := context.Background()
	l := newWatchLocal(t)
	w := watchOf(t, l, ".", agentbe.WatchOptions{})

	must(t, l.Write(ctx, "lib/a.txt", []byte("library")))
	until(t, w, "library write", changed("lib/a.txt"))

	must(t, os.WriteFile(filepath.Join(l.RootDir(), "host.txt"), []byte("host"), 0o644))
	until(t, w, "host write", changed("host.txt"))

	_, err := l.Exec(ctx, "mkdir -p cmd && echo hi > cmd/out.txt", agentbe.ExecOptions{})
	must(t, err)
	until(t, w, "command write", changed("cmd/out.txt"))

	srv := agentbe.NewMCPServer(l)
	out := srv.HandleBytes(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"mcp.txt","content":"tool"}}}`))
	if strings.Contains(string(out), `"isError":true`) {
		t.Fatalf("write_file: %s", out)
	}
	until(t, w, "MCP write", changed("mcp.txt"))

	must(t, l.Rename(ctx, "host.txt", "host2.txt"))
	until(t, w, "rename", func(ev agentbe.ChangeEvent) bool {
		return ev.Kind == agentbe.ChangeRenamed && ev.OldPath == "host.txt" && ev.Path == "host2.txt"
	})
	must(t, l.Remove(ctx, "host2.txt", agentbe.RemoveOptions{}))
	until(t, w, "remove", func(ev agentbe.ChangeEvent) bool { return ev.Kind == agentbe.ChangeRemoved && ev.Path == "host2.txt" })

	// The cursor resumes: a second watcher from the first one's start
	// sees the same events (the feed is shared and keeps them).
	evs, err := w.Since(0)
	must(t, err)
	if len(evs) == 0 || evs[0].Seq != 1 {
		t.Fatalf("Since(0) = %v", evs)
	}
	w2 := watchOf(t, l, ".", agentbe.WatchOptions{Cursor: agentbe.FormatWatchCursor(w.ID(), 0)})
	if ev, err := w2.Next(ctx); err != nil || ev.Seq != 1 || ev != evs[0] {
		t.Fatalf("resumed watcher: %v %v, want %v", ev, err, evs[0])
	}
}

// TestWatchRenameAcrossDirectoriesAndRemoveAll: a move from one directory
// to another is one renamed event with both paths; rm -rf of a watched
// tree reports every entry removed, the top directory last, and a watcher
// of that tree itself ends with ErrWatchEnded.
func TestWatchRenameAcrossDirectoriesAndRemoveAll(t *testing.T) {
	ctx := context.Background()
	l := newWatchLocal(t)
	must(t, l.Write(ctx, "a/f.txt", []byte("x")))
	must(t, l.Mkdir(ctx, "b/deep"))
	for i := range 5 {
		must(t, l.Write(ctx, fmt.Sprintf("tree/sub/%d.txt", i), []byte("x")))
	}
	w := watchOf(t, l, ".", agentbe.WatchOptions{})
	wt := watchOf(t, l, "tree", agentbe.WatchOptions{})

	must(t, l.Rename(ctx, "a/f.txt", "b/deep/g.txt"))
	until(t, w, "rename across directories", func(ev agentbe.ChangeEvent) bool {
		return ev.Kind == agentbe.ChangeRenamed && ev.OldPath == "a/f.txt" && ev.Path == "b/deep/g.txt" && !ev.IsDir
	})

	_, err := l.Exec(ctx, "rm -rf tree", agentbe.ExecOptions{})
	must(t, err)
	seen := until(t, w, "rm -rf", func(ev agentbe.ChangeEvent) bool { return ev.Kind == agentbe.ChangeRemoved && ev.Path == "tree" })
	removed := map[string]bool{}
	for _, ev := range seen {
		if ev.Kind == agentbe.ChangeRemoved {
			removed[ev.Path] = true
		}
	}
	for i := range 5 {
		if !removed[fmt.Sprintf("tree/sub/%d.txt", i)] {
			t.Fatalf("removal of tree/sub/%d.txt not reported before tree's: %v", i, seen)
		}
	}
	if !removed["tree/sub"] || !seen[len(seen)-1].IsDir {
		t.Fatalf("directories: %v", seen)
	}
	// The tree's own watcher: its events, then the end.
	wctx, cancel := context.WithTimeout(ctx, watchTimeout)
	defer cancel()
	for {
		ev, err := wt.Next(wctx)
		if err != nil {
			if !errors.Is(err, agentbe.ErrWatchEnded) {
				t.Fatalf("watcher of the removed tree: %v", err)
			}
			break
		}
		if !strings.HasPrefix(ev.Path, "tree") {
			t.Fatalf("tree watcher path %q not relative to the workspace", ev.Path)
		}
	}
}

// TestWatchOverflowIsRescan: a watcher that falls behind by more events
// than its feed keeps gets a rescan event, never silence, and goes on
// with the changes after it.
func TestWatchOverflowIsRescan(t *testing.T) {
	restore := agentbe.SetWatchRingForTest(32)
	defer restore()
	ctx := context.Background()
	l := newWatchLocal(t)
	w := watchOf(t, l, ".", agentbe.WatchOptions{})
	for i := range 200 {
		must(t, os.WriteFile(filepath.Join(l.RootDir(), fmt.Sprintf("f%03d", i)), nil, 0o644))
	}
	// Wait until the feed has published the flood (its sequence number
	// is past what it keeps), without reading it.
	deadline := time.Now().Add(watchTimeout)
	for {
		if _, err := w.Since(0); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the feed never went past its window")
		}
		time.Sleep(10 * time.Millisecond)
	}
	seen := until(t, w, "rescan", func(ev agentbe.ChangeEvent) bool { return ev.Kind == agentbe.ChangeRescan })
	if r := seen[len(seen)-1]; r.Path != "." || !strings.Contains(r.Note, "cursor too old") {
		t.Fatalf("rescan %+v", r)
	}
	if _, err := w.Since(0); !errors.Is(err, agentbe.ErrCursorTooOld) {
		t.Fatalf("Since(0) after overflow: %v", err)
	}
	must(t, l.Write(ctx, "after.txt", nil))
	until(t, w, "event after the rescan", changed("after.txt"))
}

// TestWatchScopeConfined: a scope's watcher reports paths relative to the
// scope, nothing of its siblings, and a link pointing out of the scope is
// an entry: changes where it points never surface, and the link cannot be
// watched.
func TestWatchScopeConfined(t *testing.T) {
	ctx := context.Background()
	l := newWatchLocal(t)
	outside := t.TempDir() // canary
	must(t, l.Mkdir(ctx, "sibling"))
	s, err := l.Scope("s", agentbe.ScopeOptions{})
	must(t, err)
	w := watchOf(t, s, ".", agentbe.WatchOptions{})
	must(t, os.Symlink(outside, filepath.Join(l.RootDir(), "s", "out")))
	must(t, os.Symlink("../sibling", filepath.Join(l.RootDir(), "s", "up")))
	must(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("x"), 0o644))
	must(t, l.Write(ctx, "sibling/x.txt", []byte("x")))
	must(t, os.WriteFile(filepath.Join(outside, "secret2.txt"), []byte("x"), 0o644))
	must(t, s.Write(ctx, "marker.txt", []byte("m")))
	seen := until(t, w, "marker", changed("marker.txt"))
	for _, ev := range seen {
		switch ev.Path {
		case "out", "up":
			if !ev.Symlink || ev.Kind != agentbe.ChangeCreated {
				t.Fatalf("link event %+v", ev)
			}
		case "marker.txt":
		default:
			if strings.HasPrefix(ev.Path, ".marker.txt.") { // the atomic write's temporary file
				continue
			}
			t.Fatalf("event outside the scope surfaced: %+v (all: %v)", ev, seen)
		}
	}
	for _, p := range []string{"out", "up", "../sibling", "up/x"} {
		if _, err := agentbe.Watch(ctx, s, p, agentbe.WatchOptions{}); !errors.Is(err, agentbe.ErrPathEscape) || agentbe.CodeOf(err) != agentbe.CodePathEscape {
			t.Fatalf("watching %q from the scope: %v", p, err)
		}
	}
	// An absolute path is a path of the scope: /etc is the scope's etc.
	if _, err := agentbe.Watch(ctx, s, "/etc", agentbe.WatchOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("watching /etc from the scope: %v", err)
	}
}

// TestWatchBudget: watches count against the budget given; a tree beyond
// it is refused with ErrWatchLimit.
func TestWatchBudget(t *testing.T) {
	ctx := context.Background()
	l := newWatchLocal(t)
	for i := range 4 {
		must(t, l.Mkdir(ctx, fmt.Sprintf("d%d", i)))
	}
	tenant := agentbe.NewWatchBudget(3, nil)
	if _, err := agentbe.Watch(ctx, l, ".", agentbe.WatchOptions{Budget: agentbe.NewWatchBudget(100, tenant)}); !errors.Is(err, agentbe.ErrWatchLimit) {
		t.Fatalf("5 directories on a budget of 3: %v", err)
	}
	w := watchOf(t, l, "d0", agentbe.WatchOptions{Budget: tenant})
	if tenant.Used() != 1 {
		t.Fatalf("used %d", tenant.Used())
	}
	w.Close()
}

func TestWatchMemoryNotSupported(t *testing.T) {
	m, err := agentbe.NewMemory(agentbe.MemoryConfig{})
	must(t, err)
	_, err = agentbe.Watch(context.Background(), m, ".", agentbe.WatchOptions{})
	if !errors.Is(err, agentbe.ErrWatchNotSupported) || agentbe.CodeOf(err) != agentbe.CodeNotImplemented {
		t.Fatalf("Memory watch: %v", err)
	}
}

// TestWatchSandboxedCommand: a command run under bwrap writes through
// the sandbox's bind mount of the workspace; the feed sees it like any
// other write, and a scope's watcher reports it relative to the scope.
func TestWatchSandboxedCommand(t *testing.T) {
	ctx := context.Background()
	l, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: t.TempDir(), Isolation: agentbe.IsolationBwrap})
	if err != nil {
		testenv.Require(t, false, fmt.Sprintf("a usable bwrap (%v)", err))
	}
	defer l.Destroy(ctx)
	s, err := l.Scope("job", agentbe.ScopeOptions{})
	must(t, err)
	w := watchOf(t, s, ".", agentbe.WatchOptions{})
	// The directory first, and its event awaited: a directory made and
	// filled at once is watched only once the feed has seen it, and what
	// happened in it before then is reported by a scan (created
	// out/final.txt), not as the rename.
	_, err = s.Exec(ctx, "mkdir -p out", agentbe.ExecOptions{})
	must(t, err)
	until(t, w, "the directory", func(ev agentbe.ChangeEvent) bool {
		return ev.Kind == agentbe.ChangeCreated && ev.Path == "out"
	})
	_, err = s.Exec(ctx, "echo built > out/result.txt && mv out/result.txt out/final.txt", agentbe.ExecOptions{})
	must(t, err)
	until(t, w, "sandboxed command", func(ev agentbe.ChangeEvent) bool {
		return ev.Kind == agentbe.ChangeRenamed && ev.OldPath == "out/result.txt" && ev.Path == "out/final.txt"
	})
}
