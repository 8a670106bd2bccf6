package grep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func openRoot(t testing.TB, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func write(t testing.TB, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLinksOutOfTheRoot: links to a canary directory beside the workspace
// are never followed, whether walked or named.
func TestLinksOutOfTheRoot(t *testing.T) {
	base := t.TempDir()
	ws, canary := filepath.Join(base, "ws"), filepath.Join(base, "canary")
	write(t, filepath.Join(canary, "secret.txt"), "CANARY\n")
	write(t, filepath.Join(ws, "a.txt"), "hello\n")
	for name, target := range map[string]string{
		"abs":    canary,
		"rel":    "../canary",
		"file":   filepath.Join(canary, "secret.txt"),
		"sub/up": "../../canary",
		"loop":   "loop",
		"chain":  "abs",
		"dotgit": canary, // a .gitignore link could be read as an ignore file
	} {
		p := filepath.Join(ws, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(filepath.Join(canary, "secret.txt"), filepath.Join(ws, ".gitignore"))
	root := openRoot(t, ws)
	for _, p := range []string{"", ".", "sub", "abs", "rel", "file", "sub/up", "chain", "abs/secret.txt", "../canary", "sub/../../canary"} {
		for _, mode := range []Mode{FilesWithMatches, Content} {
			res, err := Search(context.Background(), root, Options{Pattern: "CANARY", Path: p, Mode: mode, Glob: "*"})
			if err == nil && len(res.Files) > 0 {
				t.Fatalf("path %q reached the canary: %q", p, res.Format())
			}
			if err != nil && strings.Contains(err.Error(), base) && !strings.HasPrefix(p, "/") {
				t.Fatalf("path %q: error reveals a host path: %v", p, err)
			}
			if p == "abs" || p == "rel" || p == "file" || p == "../canary" {
				if !errors.Is(err, ErrEscape) {
					t.Fatalf("path %q: want ErrEscape, got %v", p, err)
				}
			}
		}
	}
	if _, err := Search(context.Background(), root, Options{Pattern: "x", Path: "loop"}); err == nil {
		t.Fatal("a link loop was searched")
	}
}

// TestFIFODoesNotBlock: a FIFO in the tree, walked or named, is skipped
// without opening it for a blocking read.
func TestFIFODoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.txt"), "foo\n")
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	os.MkdirAll(filepath.Join(dir, ".git", "info"), 0o755)
	os.MkdirAll(filepath.Join(dir, ".config", "git"), 0o755)
	for _, name := range []string{".gitignore", ".ignore", ".rgignore", ".git/info/exclude", ".config/git/ignore"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root := openRoot(t, dir)
	for _, p := range []string{"", "fifo"} {
		done := make(chan string, 1)
		go func() {
			res, err := Search(context.Background(), root, Options{Pattern: "foo", Path: p})
			if err != nil {
				done <- err.Error()
				return
			}
			done <- res.Format()
		}()
		select {
		case got := <-done:
			want := "a.txt"
			if p == "fifo" {
				want = "No matches found"
			}
			if got != want {
				t.Fatalf("path %q: %q, want %q", p, got, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("path %q: the search blocked on the FIFO", p)
		}
	}
}

// TestHugeLine: a line longer than the limit stops that file with a note
// instead of growing the buffer without bound.
func TestHugeLine(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "big.txt"), "start\n"+strings.Repeat("x", 3<<20)+"foo\nfoo end\n")
	write(t, filepath.Join(dir, "small.txt"), "foo\n")
	root := openRoot(t, dir)
	res, err := Search(context.Background(), root, Options{Pattern: "foo", Mode: Count, MaxLineBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Format()
	if !strings.Contains(got, "small.txt:1") || !strings.Contains(got, "[stopped early: big.txt was not searched to its end") {
		t.Fatalf("got %q", got)
	}
	// Within the limit the whole line is searched and printed.
	res, err = Search(context.Background(), root, Options{Pattern: "foo end", Mode: Content})
	if err != nil || res.Format() != "big.txt:foo end" {
		t.Fatalf("%v %q", err, res.Format())
	}
}

// TestOutputCap: the output stops at the byte cap with a note.
func TestOutputCap(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.txt"), strings.Repeat("foo bar baz\n", 100000))
	write(t, filepath.Join(dir, "b.txt"), "foo\n")
	root := openRoot(t, dir)
	res, err := Search(context.Background(), root, Options{Pattern: "foo", Mode: Content, MaxOutputBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Format()
	if len(got) > 200<<10 || !strings.HasSuffix(got, "[stopped early: the output reached 65536 bytes]") || strings.Contains(got, "b.txt") {
		t.Fatalf("len %d, tail %q", len(got), got[max(0, len(got)-200):])
	}
}

// TestDeepTree: a deep chain of directories is walked without trouble.
func TestDeepTree(t *testing.T) {
	dir := t.TempDir()
	p := dir
	for i := 0; i < 300; i++ {
		p = filepath.Join(p, "d")
	}
	write(t, filepath.Join(p, "x.txt"), "foo\n")
	root := openRoot(t, dir)
	res, err := Search(context.Background(), root, Options{Pattern: "foo", Mode: Count})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Format(); !strings.HasSuffix(got, "/x.txt:1") || strings.Count(got, "d/") != 300 {
		t.Fatalf("got %q", got)
	}
}

// TestCatastrophicPatterns: patterns of huge compiled size are refused as
// ripgrep refuses them; nested repetitions compile and run in linear time.
func TestCatastrophicPatterns(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.txt"), strings.Repeat("a", 5000)+"\n")
	root := openRoot(t, dir)
	for _, p := range []string{`\w{5000}`, `(\w{100}){100}`, `.{100000}`, `((a{1000}){1000}){1000}`} {
		_, err := Search(context.Background(), root, Options{Pattern: p})
		if err == nil || !strings.Contains(err.Error(), "exceeds size limit") {
			t.Errorf("%s: %v", p, err)
		}
	}
	// (a*)*b style backtracking traps are linear for us.
	res, err := Search(context.Background(), root, Options{Pattern: `(a*)*(a|aa)*c`, Timeout: time.Minute})
	if err != nil || res.Format() != "No matches found" || res.Stopped != "" {
		t.Fatalf("%v %q", err, res.Format())
	}
	// Past Go's own repeat limit (1000) but within ripgrep's.
	res, err = Search(context.Background(), root, Options{Pattern: `a{1001}`})
	if err != nil || res.Format() != "a.txt" {
		t.Fatalf("%v %q", err, res.Format())
	}
	res, err = Search(context.Background(), root, Options{Pattern: `(?:a{2}){1500}`})
	if err != nil || res.Format() != "a.txt" {
		t.Fatalf("nested repeats: %v %q", err, res.Format())
	}
}

// TestCancel: a cancelled context ends the search with a note.
func TestCancel(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 50; i++ {
		write(t, filepath.Join(dir, "f", string(rune('a'+i%26))+strings.Repeat("x", i), "x.txt"), "foo\n")
	}
	root := openRoot(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Search(ctx, root, Options{Pattern: "foo"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "the search was cancelled" {
		t.Fatalf("stopped %q", res.Stopped)
	}
}
