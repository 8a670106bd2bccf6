package watch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

func isOp(op Op, path string) func(Event) bool {
	return func(e Event) bool { return e.Op == op && e.Path == path }
}

// TestEventKinds checks every operation on every kind of entry, with the
// kind reported.
func TestEventKinds(t *testing.T) {
	dir, r := tree(t)
	write(t, join(dir, "old.txt"), "old")
	mkdir(t, join(dir, "olddir"))
	if err := os.Symlink("old.txt", join(dir, "oldlink")); err != nil {
		t.Fatal(err)
	}
	f := open(t, r, ".", nil)
	c := collect(t, f)

	steps := []struct {
		name string
		do   func()
		want Event // Seq and Time ignored
	}{
		{"create file", func() { write(t, join(dir, "f"), "x") }, Event{Op: Created, Path: "f", Kind: KindFile}},
		{"create dir", func() { mkdir(t, join(dir, "d")) }, Event{Op: Created, Path: "d", Kind: KindDir}},
		{"create symlink", func() { os.Symlink("f", join(dir, "l")) }, Event{Op: Created, Path: "l", Kind: KindSymlink}},
		{"create fifo", func() { syscall.Mkfifo(join(dir, "p"), 0o600) }, Event{Op: Created, Path: "p", Kind: KindOther}},
		{"write existing", func() { write(t, join(dir, "old.txt"), "new") }, Event{Op: Written, Path: "old.txt", Kind: KindFile}},
		{"rename file", func() { os.Rename(join(dir, "old.txt"), join(dir, "new.txt")) }, Event{Op: Renamed, OldPath: "old.txt", Path: "new.txt", Kind: KindFile}},
		{"rename dir", func() { os.Rename(join(dir, "olddir"), join(dir, "newdir")) }, Event{Op: Renamed, OldPath: "olddir", Path: "newdir", Kind: KindDir}},
		{"rename symlink", func() { os.Rename(join(dir, "oldlink"), join(dir, "newlink")) }, Event{Op: Renamed, OldPath: "oldlink", Path: "newlink", Kind: KindSymlink}},
		{"remove symlink", func() { os.Remove(join(dir, "l")) }, Event{Op: Removed, Path: "l", Kind: KindSymlink}},
		{"remove fifo", func() { os.Remove(join(dir, "p")) }, Event{Op: Removed, Path: "p", Kind: KindOther}},
		{"remove file", func() { os.Remove(join(dir, "new.txt")) }, Event{Op: Removed, Path: "new.txt", Kind: KindFile}},
		{"remove dir", func() { os.Remove(join(dir, "d")) }, Event{Op: Removed, Path: "d", Kind: KindDir}},
		{"remove renamed symlink", func() { os.Remove(join(dir, "newlink")) }, Event{Op: Removed, Path: "newlink", Kind: KindSymlink}},
	}
	for _, s := range steps {
		s.do()
		got := c.until(s.name, func(e Event) bool {
			return e.Op == s.want.Op && e.Path == s.want.Path && e.OldPath == s.want.OldPath
		})
		if got.Kind != s.want.Kind {
			t.Errorf("%s: kind %v, want %v (%s)", s.name, got.Kind, s.want.Kind, got)
		}
	}
	// Sequence numbers are gapless and increasing.
	for i, e := range c.evs {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d:%s", i, e.Seq, c.dump())
		}
	}
}

// TestRenameAcrossDirectories moves files and a directory between
// directories and checks that later changes carry the new paths.
func TestRenameAcrossDirectories(t *testing.T) {
	dir, r := tree(t)
	mkdir(t, join(dir, "a", "sub"))
	mkdir(t, join(dir, "b"))
	write(t, join(dir, "a", "f"), "f")
	write(t, join(dir, "a", "sub", "g"), "g")
	f := open(t, r, ".", nil)
	c := collect(t, f)

	must(t, os.Rename(join(dir, "a", "f"), join(dir, "b", "f2")))
	e := c.until("renamed a/f", isOp(Renamed, "b/f2"))
	if e.OldPath != "a/f" || e.Kind != KindFile {
		t.Fatalf("got %s", e)
	}
	must(t, os.Rename(join(dir, "a", "sub"), join(dir, "b", "moved")))
	e = c.until("renamed a/sub", isOp(Renamed, "b/moved"))
	if e.OldPath != "a/sub" || e.Kind != KindDir {
		t.Fatalf("got %s", e)
	}
	// The moved directory's watch follows it.
	write(t, join(dir, "b", "moved", "g"), "changed")
	c.untilOp(Written, "b/moved/g")
	write(t, join(dir, "b", "moved", "h"), "new")
	c.untilOp(Created, "b/moved/h")
	// A chain of renames of one directory.
	must(t, os.Rename(join(dir, "b"), join(dir, "c")))
	must(t, os.Rename(join(dir, "c"), join(dir, "a", "c")))
	write(t, join(dir, "a", "c", "moved", "i"), "i")
	c.untilOp(Created, "a/c/moved/i")
	if c.has(func(e Event) bool { return strings.HasPrefix(e.Path, "a/sub/") }) {
		t.Fatalf("an event under the old name:%s", c.dump())
	}
}

// TestMoveIntoAndOutOfTree: a move in from outside is a creation (with
// the directory's contents), a move out a removal, and nothing that
// happens to what moved out is reported.
func TestMoveIntoAndOutOfTree(t *testing.T) {
	dir, r := tree(t)
	outside := t.TempDir()
	mkdir(t, join(outside, "in", "deep"))
	write(t, join(outside, "in", "deep", "x"), "x")
	write(t, join(outside, "file"), "f")
	mkdir(t, join(dir, "leaving", "sub"))
	write(t, join(dir, "leavingfile"), "l")
	f := open(t, r, ".", nil)
	c := collect(t, f)

	must(t, os.Rename(join(outside, "in"), join(dir, "in")))
	c.untilOp(Created, "in")
	c.untilOp(Created, "in/deep")
	c.untilOp(Created, "in/deep/x")
	must(t, os.Rename(join(outside, "file"), join(dir, "file")))
	if e := c.untilOp(Created, "file"); e.Kind != KindFile {
		t.Fatalf("got %s", e)
	}
	// What moved in is watched.
	write(t, join(dir, "in", "deep", "y"), "y")
	c.untilOp(Created, "in/deep/y")

	must(t, os.Rename(join(dir, "leaving"), join(outside, "gone")))
	if e := c.untilOp(Removed, "leaving"); e.Kind != KindDir {
		t.Fatalf("got %s", e)
	}
	must(t, os.Rename(join(dir, "leavingfile"), join(outside, "gonefile")))
	c.untilOp(Removed, "leavingfile")
	// Changes in what moved out (now a canary outside) never surface.
	write(t, join(outside, "gone", "canary"), "c")
	write(t, join(outside, "gone", "sub", "canary"), "c")
	mkdir(t, join(outside, "gone", "sub", "canarydir"))
	write(t, join(outside, "gonefile"), "changed")
	write(t, join(dir, "marker"), "m")
	c.untilOp(Created, "marker")
	f.Close()
	if err := c.rest(); !errors.Is(err, ErrClosed) {
		t.Fatalf("feed ended with %v", err)
	}
	if c.has(func(e Event) bool {
		return strings.Contains(e.Path, "canary") || strings.HasPrefix(e.Path, "leaving/") || e.Path == "gonefile"
	}) {
		t.Fatalf("a change outside the tree surfaced:%s", c.dump())
	}
	if f.Stats().Watches != 0 {
		t.Fatalf("watches after close: %d", f.Stats().Watches)
	}
}

// TestRemoveAllSubtree removes a watched tree with os.RemoveAll and with
// rm -rf: every entry's removal is reported, deepest first, the top
// directory last, and the watches go.
func TestRemoveAllSubtree(t *testing.T) {
	for _, how := range []string{"RemoveAll", "rm -rf"} {
		t.Run(how, func(t *testing.T) {
			dir, r := tree(t)
			paths := []string{"top", "top/a", "top/a/b", "top/c"}
			for _, p := range paths[1:] {
				mkdir(t, join(dir, p))
			}
			files := []string{"top/f", "top/a/f", "top/a/b/f", "top/a/b/g", "top/c/f"}
			for _, p := range files {
				write(t, join(dir, p), p)
			}
			f := open(t, r, ".", nil)
			if n := f.Stats().Watches; n != 5 {
				t.Fatalf("watches before: %d, want 5", n)
			}
			c := collect(t, f)
			if how == "RemoveAll" {
				must(t, os.RemoveAll(join(dir, "top")))
			} else {
				run(t, dir, "rm -rf top")
			}
			c.untilOp(Removed, "top")
			pos := map[string]int{}
			for i, e := range c.evs {
				if e.Op == Removed {
					pos[e.Path] = i
				}
			}
			for _, p := range append(paths, files...) {
				if _, ok := pos[p]; !ok {
					t.Errorf("no removal of %s:%s", p, c.dump())
				}
			}
			for _, p := range append(paths[1:], files...) {
				parent := p[:strings.LastIndexByte(p, '/')]
				if pos[p] > pos[parent] {
					t.Errorf("%s removed after its directory:%s", p, c.dump())
				}
			}
			waitUntil(t, "watches dropped", func() bool { return f.Stats().Watches == 1 })
		})
	}
}

// TestRootRemovedOrMoved: the feed ends with an Ended event and
// ErrRootGone when its directory goes.
func TestRootRemovedOrMoved(t *testing.T) {
	for _, how := range []string{"removed", "moved"} {
		t.Run(how, func(t *testing.T) {
			dir, r := tree(t)
			mkdir(t, join(dir, "w", "sub"))
			write(t, join(dir, "w", "sub", "f"), "f")
			f := open(t, r, "w", nil)
			c := collect(t, f)
			if how == "removed" {
				must(t, os.RemoveAll(join(dir, "w")))
			} else {
				must(t, os.Rename(join(dir, "w"), join(dir, "w2")))
			}
			err := c.rest()
			if !errors.Is(err, ErrRootGone) {
				t.Fatalf("ended with %v:%s", err, c.dump())
			}
			last := c.evs[len(c.evs)-1]
			if last.Op != Ended || !strings.Contains(last.Note, how) {
				t.Fatalf("last event %s:%s", last, c.dump())
			}
			if how == "removed" && !c.has(isOp(Removed, "sub/f")) {
				t.Fatalf("removals before the end missing:%s", c.dump())
			}
			<-f.Done()
			if !errors.Is(f.Err(), ErrRootGone) {
				t.Fatalf("Err() = %v", f.Err())
			}
			if f.Stats().Watches != 0 {
				t.Fatal("watches left")
			}
		})
	}
}

// TestLinkOutOfRoot: links inside the tree are entries, never followed:
// nothing done in a canary directory they point to surfaces, and a link
// to a directory inside is not a second path to it.
func TestLinkOutOfRoot(t *testing.T) {
	dir, r := tree(t)
	canary := t.TempDir()
	write(t, join(canary, "file"), "c")
	mkdir(t, join(canary, "sub"))
	mkdir(t, join(dir, "real"))
	must(t, os.Symlink(canary, join(dir, "out")))
	must(t, os.Symlink(join(canary, "file"), join(dir, "outfile")))
	must(t, os.Symlink("real", join(dir, "in")))
	f := open(t, r, ".", nil)
	if n := f.Stats().Watches; n != 2 {
		t.Fatalf("watches %d, want 2 (links are not watched)", n)
	}
	c := collect(t, f)

	must(t, os.Symlink(canary, join(dir, "out2")))
	if e := c.untilOp(Created, "out2"); e.Kind != KindSymlink {
		t.Fatalf("got %s", e)
	}
	write(t, join(canary, "new"), "n")
	write(t, join(canary, "file"), "changed")
	write(t, join(dir, "outfile"), "written through the link")
	write(t, join(dir, "out", "sub", "viaLink"), "v")
	mkdir(t, join(canary, "sub", "dir"))
	must(t, os.Remove(join(canary, "new")))
	write(t, join(dir, "in", "f"), "inside")
	c.untilOp(Created, "real/f")
	write(t, join(dir, "marker"), "m")
	c.untilOp(Created, "marker")
	f.Close()
	c.rest()
	for _, e := range c.evs {
		switch {
		case e.Path == "out2" || e.Path == "marker" || e.Path == "real/f" || e.Op == Ended:
		default:
			t.Errorf("unexpected event %s", e)
		}
	}

	// The watched directory itself is never reached through a link.
	for _, p := range []string{"in", "out", "out/sub", "in/."} {
		if _, err := Open(r, p, nil); !errors.Is(err, ErrSymlink) {
			t.Errorf("Open(%q) = %v, want ErrSymlink", p, err)
		}
	}
	if _, err := Open(r, "marker", nil); !errors.Is(err, ErrNotDir) {
		t.Errorf("Open(file) = %v, want ErrNotDir", err)
	}
	for _, p := range []string{"..", "../x", "/etc", "real/../.."} {
		_, err := Open(r, p, nil)
		if err == nil || strings.Contains(err.Error(), dir) {
			t.Errorf("Open(%q) = %v: want an error not naming the host path", p, err)
		}
	}
}

// TestMkdirThenCreate creates many files right after each mkdir (and
// nested directories): none is lost, none reported twice.
func TestMkdirThenCreate(t *testing.T) {
	dir, r := tree(t)
	f := open(t, r, ".", nil)
	c := collect(t, f)
	const dirs, files = 30, 40
	want := map[string]bool{}
	for i := range dirs {
		d := fmt.Sprintf("d%d", i)
		mkdir(t, join(dir, d, "n1", "n2"))
		want[d], want[d+"/n1"], want[d+"/n1/n2"] = true, true, true
		for j := range files {
			p := fmt.Sprintf("%s/n1/n2/f%d", d, j)
			if j%2 == 0 {
				p = fmt.Sprintf("%s/f%d", d, j)
			}
			write(t, join(dir, p), "x")
			want[p] = true
		}
	}
	// The same through a shell: mkdir -p and files in one process.
	run(t, dir, "mkdir -p s/t && for i in 1 2 3 4 5 6 7 8 9; do echo $i > s/t/$i; done")
	want["s"], want["s/t"] = true, true
	for i := 1; i <= 9; i++ {
		want[fmt.Sprintf("s/t/%d", i)] = true
	}
	seen := map[string]int{}
	for missing := len(want); missing > 0; {
		e, err := c.next()
		if err != nil {
			t.Fatalf("%v with %d of %d missing", err, missing, len(want))
		}
		switch e.Op {
		case Created:
			if seen[e.Path]++; seen[e.Path] == 1 && want[e.Path] {
				missing--
			}
		case Rescan:
			t.Fatalf("rescan: %s", e)
		}
	}
	// Duplicates would have come before the marker.
	write(t, join(dir, "marker"), "m")
	for {
		e, err := c.next()
		if err != nil {
			t.Fatal(err)
		}
		if e.Path == "marker" {
			break
		}
		if e.Op == Created {
			seen[e.Path]++
		}
	}
	for p := range seen {
		if !want[p] {
			t.Errorf("unexpected creation of %s", p)
		}
	}
	for p := range want {
		if seen[p] != 1 {
			t.Errorf("%s created %d times", p, seen[p])
		}
	}
}

// TestShellAndRootChanges: changes by another process and through an
// os.Root both appear.
func TestShellAndRootChanges(t *testing.T) {
	dir, r := tree(t)
	f := open(t, r, ".", nil)
	c := collect(t, f)

	run(t, dir, "echo hi > a; mkdir d; mv a d/b; echo more >> d/b; ln -s d/b l; rm l")
	c.untilOp(Created, "a")
	c.untilOp(Created, "d")
	e := c.untilOp(Renamed, "d/b")
	if e.OldPath != "a" {
		t.Fatalf("got %s", e)
	}
	c.untilOp(Written, "d/b")
	c.untilOp(Created, "l")
	c.untilOp(Removed, "l")

	must(t, r.Mkdir("rd", 0o755))
	c.untilOp(Created, "rd")
	must(t, r.WriteFile("rd/x", []byte("x"), 0o644))
	c.untilOp(Created, "rd/x")
	c.untilOp(Written, "rd/x")
	must(t, r.Rename("rd/x", "y"))
	c.untilOp(Renamed, "y")
	must(t, r.Remove("y"))
	c.untilOp(Removed, "y")
}

// TestSubdirectoryFeed watches a directory below the root: paths are
// relative to it and nothing outside it surfaces.
func TestSubdirectoryFeed(t *testing.T) {
	dir, r := tree(t)
	mkdir(t, join(dir, "ws", "a"))
	f := open(t, r, "ws/a", nil)
	c := collect(t, f)
	write(t, join(dir, "ws", "sibling"), "s")
	write(t, join(dir, "ws", "a", "f"), "f")
	e := c.untilOp(Created, "f")
	f.Close()
	c.rest()
	if c.evs[0] != e {
		t.Fatalf("first event %s:%s", c.evs[0], c.dump())
	}
}

func run(t testing.TB, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
