package agentbe

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/fstools"
	"github.com/agentbe/agent-backend/mcp"
)

// The tests of this file are the reproductions of issue 11 ("Harden the
// library before it faces the network"): each request that took unbounded
// time or memory now meets a bound. Memory is checked with TotalAlloc, which
// counts every byte allocated during the call (no timing assertions).

// hardTools returns the file tools on a fresh Local workspace.
func hardTools(t testing.TB, cfg LocalConfig) (string, map[string]toolFunc) {
	t.Helper()
	cfg.RootDir = t.TempDir()
	cfg.Isolation = IsolationNone
	l, err := NewLocal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Destroy(context.Background()) })
	tools := workspaceTools(l)
	return l.RootDir(), tools
}

// run calls a tool and returns its first text (or "" for media) and isError.
func run(t testing.TB, ctx context.Context, tools map[string]toolFunc, name string, args any) (string, bool) {
	t.Helper()
	raw, ok := args.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(args); err != nil {
			t.Fatal(err)
		}
	}
	res, err := tools[name](ctx, raw)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res.Content[0].Text, res.IsError
}

// allocated returns the bytes allocated while fn ran.
func allocated(fn func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

const mib = 1 << 20

// TestSparseFileReadsAreBounded: a 64 GiB sparse file (what `truncate -s
// 64G` makes) used to size a buffer from Stat and kill the process. Every
// tool that reads it now fails with an error naming the limit, or reads only
// what it needs, allocating at most a few times the limit.
func TestSparseFileReadsAreBounded(t *testing.T) {
	const limit = 1 * mib
	root, tools := hardTools(t, LocalConfig{MaxReadBytes: limit})
	if err := os.WriteFile(filepath.Join(root, "big"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(root, "big"), 64<<30); err != nil {
		t.Fatal(err)
	}
	edit := map[string]any{"path": "big", "edits": []map[string]string{{"oldText": "a", "newText": "b"}}}
	for _, c := range []struct {
		tool string
		args any
		want string
	}{
		{"read_text_file", map[string]any{"path": "big"}, "over the read limit of 1048576 bytes"},
		{"read_text_file", map[string]any{"path": "big", "head": 1}, "larger than the read limit of 1048576 bytes"},
		{"read_text_file", map[string]any{"path": "big", "tail": 1}, "larger than the read limit of 1048576 bytes"},
		{"read_media_file", map[string]any{"path": "big"}, "over the read limit of 1048576 bytes"},
		{"read_multiple_files", map[string]any{"paths": []string{"big"}}, "over the read limit of 1048576 bytes"},
		{"edit_file", edit, "over the read limit of 1048576 bytes"},
	} {
		t.Run(c.tool, func(t *testing.T) {
			var text string
			var isErr bool
			n := allocated(func() { text, isErr = run(t, context.Background(), tools, c.tool, c.args) })
			if c.tool != "read_multiple_files" && !isErr {
				t.Fatalf("no error: %.200q", text)
			}
			if !strings.Contains(text, c.want) || !strings.Contains(text, "File too large") {
				t.Errorf("error %q does not name the limit (%q)", text, c.want)
			}
			if n > 8*limit {
				t.Errorf("allocated %d bytes for a refused read (limit %d)", n, limit)
			}
		})
	}
	// head and tail still work on a large file with short lines at the
	// ends: they read only what they return.
	f, err := os.OpenFile(filepath.Join(root, "big"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("first\nsecond\n"), 0)
	f.WriteAt([]byte("\nlast-but-one\nlast"), 64<<30-int64(len("\nlast-but-one\nlast")))
	f.Close()
	var head, tail string
	n := allocated(func() {
		head, _ = run(t, context.Background(), tools, "read_text_file", map[string]any{"path": "big", "head": 2})
		tail, _ = run(t, context.Background(), tools, "read_text_file", map[string]any{"path": "big", "tail": 2})
	})
	if head != "first\nsecond" || tail != "last-but-one\nlast" {
		t.Errorf("head %q, tail %q", head, tail)
	}
	if n > limit {
		t.Errorf("head and tail of a sparse file allocated %d bytes", n)
	}
}

// TestDefaultReadLimitIsDocumented: the zero value of MaxReadBytes is the
// documented default, used by the tools too.
func TestDefaultReadLimitIsDocumented(t *testing.T) {
	if DefaultMaxReadBytes != fstools.DefaultMaxReadBytes || fstools.DefaultMaxReadBytes != 64*mib {
		t.Fatalf("defaults differ: %d, %d", DefaultMaxReadBytes, fstools.DefaultMaxReadBytes)
	}
	l, err := NewLocal(LocalConfig{RootDir: t.TempDir(), Isolation: IsolationNone})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Destroy(context.Background())
	if l.MaxReadBytes() != DefaultMaxReadBytes {
		t.Errorf("MaxReadBytes() = %d", l.MaxReadBytes())
	}
	var _ fstools.ReadLimiter = l
	if _, err := NewLocal(LocalConfig{RootDir: t.TempDir(), MaxReadBytes: -1}); CodeOf(err) != CodeInvalidConfiguration {
		t.Errorf("negative MaxReadBytes: %v", err)
	}
}

// TestTailOfLongLineIsLinear: tail 1 of a 64 MB file without newlines took
// 67 s (each block was prepended to the tail read so far). A line that fits
// one result comes back whole at a cost linear in its size; a 64 MB one
// stops once it is over what one result can carry, and says how to read
// less.
func TestTailOfLongLineIsLinear(t *testing.T) {
	root, tools := hardTools(t, LocalConfig{})
	for _, size := range []int{4_000_000, 64_000_000} {
		name := fmt.Sprintf("line%d", size)
		if err := os.WriteFile(filepath.Join(root, name), []byte(strings.Repeat("x", size)), 0o644); err != nil {
			t.Fatal(err)
		}
		var text string
		var isErr bool
		n := allocated(func() {
			text, isErr = run(t, context.Background(), tools, "read_text_file", map[string]any{"path": name, "tail": 1})
		})
		if size < mcp.DefaultMaxMessageBytes/2 {
			if isErr || len(text) != size {
				t.Fatalf("tail: error %v, %d bytes", isErr, len(text))
			}
		} else if !isErr || !strings.Contains(text, "head or tail") {
			t.Fatalf("tail of %d bytes: error %v, %.300q", size, isErr, text)
		}
		if n > uint64(3*min(size, mcp.DefaultMaxMessageBytes)) {
			t.Errorf("tail of a %d-byte line allocated %d bytes", size, n)
		}
	}
}

// TestNonRegularFilesAreRefused: a FIFO held open by a writer blocked
// read_text_file for the writer's lifetime, and a character device was read
// forever. The file tools read regular files only.
func TestNonRegularFilesAreRefused(t *testing.T) {
	root, tools := hardTools(t, LocalConfig{})
	fifo := filepath.Join(root, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// O_RDWR opens without waiting and keeps a writer on the FIFO.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ln, err := net.Listen("unix", filepath.Join(root, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	names := []string{"fifo", "sock"}
	// A character device like /dev/zero (mknod needs privileges; the test
	// runs as root in CI, where the device case is always covered).
	if err := syscall.Mknod(filepath.Join(root, "zero"), syscall.S_IFCHR|0o666, int(1<<8|5)); err == nil {
		names = append(names, "zero")
	} else if os.Getuid() == 0 {
		t.Fatalf("mknod as root: %v", err)
	}
	for _, name := range names {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"read_text_file", map[string]any{"path": name}},
			{"read_text_file", map[string]any{"path": name, "head": 1}},
			{"read_text_file", map[string]any{"path": name, "tail": 1}},
			{"read_media_file", map[string]any{"path": name}},
			{"read_multiple_files", map[string]any{"paths": []string{name}}},
			{"edit_file", map[string]any{"path": name, "edits": []map[string]string{{"oldText": "a", "newText": "b"}}}},
		} {
			done := make(chan string, 1)
			go func() {
				text, _ := run(t, context.Background(), tools, c.tool, c.args)
				done <- text
			}()
			select {
			case text := <-done:
				if !strings.Contains(text, "not a regular file") && !strings.Contains(text, "Not a regular file") {
					t.Errorf("%s %v: %q", c.tool, c.args, text)
				}
			case <-time.After(time.Minute):
				t.Fatalf("%s on %s blocks", c.tool, name)
			}
		}
	}
}

// TestGlobPatternsAreBounded: search_files with "{a,b}"x10 + 200,000
// characters took 9.8 GB and 21 s, "{}"x400,000 58 s of CPU. Patterns over
// 64 KiB are refused; within the bound, brace expansion is limited in count
// and bytes and literal braces are skipped in linear time.
func TestGlobPatternsAreBounded(t *testing.T) {
	root, tools := hardTools(t, LocalConfig{})
	for i := 0; i < 50; i++ {
		os.WriteFile(filepath.Join(root, "f"+strconv.Itoa(i)), nil, 0o644)
	}
	search := func(pattern string, excludes ...string) (string, bool, uint64) {
		var text string
		var isErr bool
		args := map[string]any{"path": ".", "pattern": pattern}
		if excludes != nil {
			args["excludePatterns"] = excludes
		}
		n := allocated(func() { text, isErr = run(t, context.Background(), tools, "search_files", args) })
		return text, isErr, n
	}
	for _, p := range []string{
		strings.Repeat("{a,b}", 10) + strings.Repeat("x", 200_000),
		strings.Repeat("{}", 400_000),
		strings.Repeat("[", 100_000),
	} {
		text, isErr, n := search(p)
		if !isErr || !strings.Contains(text, "Pattern too long") || !strings.Contains(text, "65536") {
			t.Errorf("pattern of %d bytes: %v %.100q", len(p), isErr, text)
		}
		if n > 8*mib {
			t.Errorf("refusing a pattern of %d bytes allocated %d", len(p), n)
		}
	}
	if text, isErr, _ := search("*", strings.Repeat("x", 40_000), strings.Repeat("y", 40_000)); !isErr || !strings.Contains(text, "Pattern too long") {
		t.Errorf("excludes over the bound together: %v %.100q", isErr, text)
	}
	// Just under the bound: expanded and matched, in bounded memory.
	for _, p := range []string{
		strings.Repeat("{a,b}", 10) + strings.Repeat("x", 60_000),
		strings.Repeat("{}", 30_000) + "f1",
		strings.Repeat("[", 60_000) + "*",
		strings.Repeat("[[:", 20_000) + "*",
		strings.Repeat("{a,b}", 10) + strings.Repeat("[", 60_000),
	} {
		text, isErr, n := search(p)
		if isErr {
			t.Errorf("pattern of %d bytes refused: %.100q", len(p), text)
		}
		if n > 64*mib {
			t.Errorf("pattern of %d bytes allocated %d", len(p), n)
		}
	}
	if text, _, _ := search(strings.Repeat("{}", 30_000) + "f1"); text != "No matches found" {
		// "{}" stays literal, as minimatch's brace expansion leaves it.
		t.Errorf("literal braces: %.100q", text)
	}
}

// deepChain makes a chain of depth directories with create_directory, the
// way an agent can without exec.
func deepChain(t *testing.T, tools map[string]toolFunc, depth int) {
	t.Helper()
	if text, isErr := run(t, context.Background(), tools, "create_directory", map[string]any{"path": strings.Repeat("d/", depth)}); isErr {
		t.Fatalf("create_directory: %q", text)
	}
}

// TestDeepTreesAreBounded: directory_tree over a 15,000-deep chain made with
// create_directory took 8 GB. The walks of directory_tree and search_files
// stop 256 levels down with an error.
func TestDeepTreesAreBounded(t *testing.T) {
	_, tools := hardTools(t, LocalConfig{})
	deepChain(t, tools, 15_000)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"directory_tree", map[string]any{"path": "."}},
		{"search_files", map[string]any{"path": ".", "pattern": "**/x"}},
	} {
		var text string
		var isErr bool
		n := allocated(func() { text, isErr = run(t, context.Background(), tools, c.tool, c.args) })
		if !isErr || !strings.Contains(text, "Directory tree too deep") || !strings.Contains(text, "256 levels") {
			t.Errorf("%s: %v %.120q", c.tool, isErr, text)
		}
		if n > 64*mib {
			t.Errorf("%s over a deep chain allocated %d bytes", c.tool, n)
		}
	}
	// Within the depth bound the tree is complete.
	_, tools = hardTools(t, LocalConfig{})
	deepChain(t, tools, 200)
	text, isErr := run(t, context.Background(), tools, "directory_tree", map[string]any{"path": "."})
	if isErr || strings.Count(text, `"name": "d"`) != 200 {
		t.Errorf("200-deep tree: %v %.200q", isErr, text)
	}
}

// TestTreeOutputIsBounded: the JSON of directory_tree may not grow past the
// read limit.
func TestTreeOutputIsBounded(t *testing.T) {
	root, tools := hardTools(t, LocalConfig{MaxReadBytes: 64 << 10})
	for i := 0; i < 1000; i++ {
		os.WriteFile(filepath.Join(root, "file-with-a-longish-name-"+strconv.Itoa(i)), nil, 0o644)
	}
	text, isErr := run(t, context.Background(), tools, "directory_tree", map[string]any{"path": "."})
	if !isErr || !strings.Contains(text, "Result too large") || !strings.Contains(text, "65536") {
		t.Errorf("directory_tree: %v %.120q", isErr, text)
	}
	text, isErr = run(t, context.Background(), tools, "search_files", map[string]any{"path": ".", "pattern": "*"})
	if !isErr || !strings.Contains(text, "Result too large") {
		t.Errorf("search_files: %v %.120q", isErr, text)
	}
}

// TestManyArgumentKeysAreLinear: an arguments object with 200,000 keys took
// 26 s (each key was looked up among the previous ones).
func TestManyArgumentKeysAreLinear(t *testing.T) {
	root, tools := hardTools(t, LocalConfig{})
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello"), 0o644)
	var b strings.Builder
	b.WriteString(`{"path":"a.txt"`)
	for i := 0; i < 200_000; i++ {
		b.WriteString(`,"k` + strconv.Itoa(i) + `":0`)
	}
	b.WriteString(`,"k5":1}`)
	var text string
	var isErr bool
	n := allocated(func() {
		text, isErr = run(t, context.Background(), tools, "read_text_file", json.RawMessage(b.String()))
	})
	if isErr || text != "hello" {
		t.Fatalf("read_text_file: %v %q", isErr, text)
	}
	if n > 128*mib {
		t.Errorf("200k keys allocated %d bytes", n)
	}
}

// TestEditFileWorstCasesAreBounded: edit_file on a 300 KB line of backticks
// (the diff fence was searched for with ever longer runs) and a 20,000-line
// replacement (Myers' diff is quadratic in the edit length) took ~19 s each.
func TestEditFileWorstCasesAreBounded(t *testing.T) {
	root, tools := hardTools(t, LocalConfig{})
	ticks := strings.Repeat("`", 300_000)
	os.WriteFile(filepath.Join(root, "ticks"), []byte(ticks+"\n"), 0o644)
	var text string
	var isErr bool
	n := allocated(func() {
		text, isErr = run(t, context.Background(), tools, "edit_file", map[string]any{"path": "ticks", "dryRun": true,
			"edits": []map[string]string{{"oldText": ticks, "newText": "x"}}})
	})
	fence := strings.Repeat("`", 300_001)
	if isErr || !strings.HasPrefix(text, fence+"diff\n") || !strings.HasSuffix(text, "\n"+fence+"\n\n") {
		t.Errorf("backticks: %v %.80q", isErr, text)
	}
	if n > 16*mib {
		t.Errorf("backticks allocated %d bytes", n)
	}

	var oldLines, newLines []string
	for i := 0; i < 20_000; i++ {
		oldLines = append(oldLines, "old line "+strconv.Itoa(i))
		newLines = append(newLines, "new line "+strconv.Itoa(i))
	}
	old := strings.Join(oldLines, "\n")
	os.WriteFile(filepath.Join(root, "big.txt"), []byte("head\n"+old+"\ntail\n"), 0o644)
	n = allocated(func() {
		text, isErr = run(t, context.Background(), tools, "edit_file", map[string]any{"path": "big.txt",
			"edits": []map[string]string{{"oldText": old, "newText": strings.Join(newLines, "\n")}}})
	})
	if isErr || !strings.Contains(text, "@@ -1,20002 +1,20002 @@\n head\n-old line 0\n") ||
		!strings.Contains(text, "\n+new line 19999\n tail\n") {
		t.Errorf("20k-line replacement: %v %.300q", isErr, text)
	}
	if n > 512*mib {
		t.Errorf("20k-line replacement allocated %d bytes", n)
	}
	got, _ := os.ReadFile(filepath.Join(root, "big.txt"))
	if string(got) != "head\n"+strings.Join(newLines, "\n")+"\ntail\n" {
		t.Error("20k-line replacement not written")
	}

	// The whitespace-insensitive fallback over many near-matches: KMP over
	// trimmed lines instead of a window compare at every line.
	os.WriteFile(filepath.Join(root, "same.txt"), []byte(strings.Repeat("  a\n", 20_000)+"  b\n"), 0o644)
	pat := strings.Repeat("a\n", 10_000) + "b"
	allocated(func() {
		text, isErr = run(t, context.Background(), tools, "edit_file", map[string]any{"path": "same.txt", "dryRun": true,
			"edits": []map[string]string{{"oldText": pat, "newText": "c"}}})
	})
	if isErr || !strings.Contains(text, "+  c\n") {
		t.Errorf("fallback: %v %.200q", isErr, text)
	}
}

// TestCancelStopsTheWork: a call whose context is cancelled (what
// notifications/cancelled and a per-call deadline do) stops its walk and
// returns instead of finishing the work.
func TestCancelStopsTheWork(t *testing.T) {
	_, tools := hardTools(t, LocalConfig{})
	for i := 0; i < 100; i++ {
		run(t, context.Background(), tools, "create_directory", map[string]any{"path": "dir" + strconv.Itoa(i) + "/" + strings.Repeat("s/", 40)})
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"directory_tree", map[string]any{"path": "."}},
		{"search_files", map[string]any{"path": ".", "pattern": "**/" + strings.Repeat("*a", 2000) + "b"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		text, isErr := run(t, ctx, tools, c.tool, c.args)
		cancel()
		if !isErr || !strings.Contains(text, "context deadline exceeded") {
			t.Errorf("%s after its deadline: %v %.100q", c.tool, isErr, text)
		}
	}
}

// TestEditCountIsBounded: every edit scans the whole file, so the number
// of edits times the file size is bounded (64 times the read limit).
func TestEditCountIsBounded(t *testing.T) {
	root, tools := hardTools(t, LocalConfig{MaxReadBytes: 64 << 10})
	os.WriteFile(filepath.Join(root, "f"), []byte(strings.Repeat("abcdefgh\n", 6000)), 0o644) // 54,000 bytes
	many := make([]map[string]string, 100)
	for i := range many {
		many[i] = map[string]string{"oldText": "abcdefgh", "newText": "ABCDEFGH"}
	}
	text, isErr := run(t, context.Background(), tools, "edit_file", map[string]any{"path": "f", "edits": many, "dryRun": true})
	if !isErr || !strings.Contains(text, "Too many edits: 100 edits") || !strings.Contains(text, "4194304 bytes") {
		t.Errorf("100 edits: %v %.200q", isErr, text)
	}
	text, isErr = run(t, context.Background(), tools, "edit_file", map[string]any{"path": "f", "edits": many[:50], "dryRun": true})
	if isErr || strings.Count(text, "+ABCDEFGH") != 50 {
		t.Errorf("50 edits: %v %.200q", isErr, text)
	}
}

// TestMemoryTreeIsLinear: listing a Memory directory scanned every key, so
// directory_tree over n directories cost n² key visits. Listings now come
// from a children index.
func TestMemoryTreeIsLinear(t *testing.T) {
	initial := map[string][]byte{}
	for i := 0; i < 20_000; i++ {
		initial["d"+strconv.Itoa(i)+"/f"] = []byte("x")
	}
	m, err := NewMemory(MemoryConfig{RootDir: "/ws", Initial: initial})
	if err != nil {
		t.Fatal(err)
	}
	tools := workspaceTools(m)
	text, isErr := run(t, context.Background(), tools, "directory_tree", map[string]any{"path": "/ws"})
	if isErr || strings.Count(text, `"name": "f"`) != 20_000 || strings.Count(text, `"type": "directory"`) != 20_000 {
		t.Fatalf("tree: %v %.200q", isErr, text)
	}
	// The index follows removals and renames.
	ctx := context.Background()
	if err := m.Remove(ctx, "d1", RemoveOptions{Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if err := m.Rename(ctx, "d2", "e/d2"); err != nil {
		t.Fatal(err)
	}
	names, err := m.ReadDir(ctx, "/ws")
	if err != nil || len(names) != 19_999 || names[0] != "d0" || names[len(names)-1] != "e" {
		t.Errorf("ReadDir after remove and rename: %d names, %v", len(names), err)
	}
	if sub, _ := m.ReadDir(ctx, "e"); len(sub) != 1 || sub[0] != "d2" {
		t.Errorf("e: %v", sub)
	}
}
