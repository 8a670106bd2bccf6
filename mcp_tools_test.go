package agentbe

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/internal/fstools"
	"github.com/agentbe/agent-backend/mcp"

	"golang.org/x/crypto/ssh"
)

// TestToolsOnEveryBackend runs one scenario through the filesystem tools on
// Local, Memory and scopes of both, each with the fast paths of its kind
// (toolsWorkspace), none of which is in a backend's own method set.
func TestToolsOnEveryBackend(t *testing.T) {
	// Each case gets its own store, so the order of the cases does not matter.
	newLocal := func() *Local {
		l, err := NewLocal(LocalConfig{RootDir: t.TempDir(), Isolation: IsolationNone})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Destroy(context.Background()) })
		return l
	}
	newMemory := func() *Memory {
		m, err := NewMemory(MemoryConfig{RootDir: "/ws"})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	local, mem := newLocal(), newMemory()
	scopedLocal := newLocal()
	os.MkdirAll(filepath.Join(scopedLocal.RootDir(), "sub"), 0o755)
	localScope, err := scopedLocal.Scope("sub", ScopeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	memScope, err := newMemory().Scope("sub", ScopeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]Backend{"local": local, "memory": mem, "local-scope": localScope, "memory-scope": memScope} {
		t.Run(name, func(t *testing.T) {
			checkToolExtensions(t, b, !strings.HasPrefix(name, "memory"))
			h := workspaceTools(b)
			call := func(tool string, args any) (string, bool) {
				raw, _ := json.Marshal(args)
				res, err := h[tool](context.Background(), raw)
				if err != nil {
					t.Fatalf("%s: %v", tool, err)
				}
				return res.Content[0].Text, res.IsError
			}
			root := b.RootDir()
			listing := "[FILE] b.txt\n[DIR] e"
			if strings.HasPrefix(name, "memory") {
				listing = "[FILE] b.txt" // Memory's directories are implicit: an empty one does not exist
			}
			steps := []struct {
				tool    string
				args    any
				want    string
				isError bool
			}{
				{"create_directory", map[string]any{"path": "d/e"}, "Successfully created directory d/e", false},
				{"write_file", map[string]any{"path": "d/a.txt", "content": "one\ntwo\n"}, "Successfully wrote to d/a.txt", false},
				{"read_text_file", map[string]any{"path": "/d/a.txt", "tail": 2}, "two\n", false},
				{"read_text_file", map[string]any{"path": root + "/d/a.txt", "head": 1}, "one", false},
				{"edit_file", map[string]any{"path": "d/a.txt", "edits": []any{map[string]any{"oldText": "two", "newText": "2"}}},
					"```diff\nIndex: " + root + "/d/a.txt\n===================================================================\n--- " + root + "/d/a.txt\toriginal\n+++ " + root + "/d/a.txt\tmodified\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n```\n\n", false},
				{"move_file", map[string]any{"source": "d/a.txt", "destination": "d/b.txt"}, "Successfully moved d/a.txt to d/b.txt", false},
				{"read_multiple_files", map[string]any{"paths": []string{"d/b.txt", "d/a.txt"}},
					"d/b.txt:\none\n2\n\n\n---\nd/a.txt: Error - ENOENT: no such file or directory, open '" + root + "/d/a.txt'", false},
				{"search_files", map[string]any{"path": ".", "pattern": "**/*.txt"}, root + "/d/b.txt", false},
				{"list_directory", map[string]any{"path": "d"}, listing, false},
				{"get_file_info", map[string]any{"path": "nope"}, "ENOENT: no such file or directory, stat '" + root + "/nope'", true},
				{"read_text_file", map[string]any{"path": "../x"}, "Access denied - path outside allowed directories: " + path.Join(path.Dir(root), "x") + " not in " + root, true},
				{"list_allowed_directories", map[string]any{}, "Allowed directories:\n" + root, false},
			}
			for _, s := range steps {
				got, isErr := call(s.tool, s.args)
				if got != s.want || isErr != s.isError {
					t.Errorf("%s %v:\n got %q (error %v)\nwant %q", s.tool, s.args, got, isErr, s.want)
				}
			}
			got, _ := call("directory_tree", map[string]any{"path": "d"})
			if !strings.Contains(got, `"name": "b.txt"`) {
				t.Errorf("directory_tree: %s", got)
			}
		})
	}
}

// BenchmarkLocalTools measures the tools on agentbe's Local backend (what
// the daemon serves).
func BenchmarkLocalTools(b *testing.B) {
	root := b.TempDir()
	for i := 0; i < 100; i++ {
		os.MkdirAll(filepath.Join(root, "d", "sub"), 0o755)
		os.WriteFile(filepath.Join(root, "d", "f"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+".txt"), []byte("x"), 0o644)
		os.WriteFile(filepath.Join(root, "d", "sub", string(rune('a'+i%26))+".go"), []byte("x"), 0o644)
	}
	os.WriteFile(filepath.Join(root, "r.txt"), []byte(strings.Repeat("0123456789abcde\n", 64)), 0o644)
	// The shared harness's fixtures: a read and a list two levels down.
	os.MkdirAll(filepath.Join(root, "bench", "list100"), 0o755)
	os.MkdirAll(filepath.Join(root, "bench", "write"), 0o755)
	os.WriteFile(filepath.Join(root, "bench", "read1k.txt"), []byte(strings.Repeat("0123456789abcde\n", 64)), 0o644)
	for i := 0; i < 100; i++ {
		os.WriteFile(filepath.Join(root, "bench", "list100", fmt.Sprintf("f%03d.txt", i)), []byte("x\n"), 0o644)
	}
	local, err := NewLocal(LocalConfig{RootDir: root, Isolation: IsolationNone})
	if err != nil {
		b.Fatal(err)
	}
	defer local.Destroy(context.Background())
	h := workspaceTools(local)
	for _, c := range []struct{ name, tool, args string }{
		{"ReadTextFile1K", "read_text_file", `{"path":"r.txt"}`},
		{"ListDirectory", "list_directory", `{"path":"d"}`},
		{"HarnessRead1K", "read_text_file", `{"path":"bench/read1k.txt"}`},
		{"HarnessList100", "list_directory", `{"path":"bench/list100"}`},
		{"HarnessWrite4K", "write_file", `{"path":"bench/write/w00.txt","content":"` + strings.Repeat("0123456789abcde\\n", 256) + `"}`},
		{"SearchFiles", "search_files", `{"path":".","pattern":"**/*.go"}`},
		{"DirectoryTree", "directory_tree", `{"path":"."}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := h[c.tool](context.Background(), json.RawMessage(c.args))
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}

// TestLocalErrorTexts checks that Local's errors carry the errno
// the tools need to word them as Node does.
func TestLocalErrorTexts(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "d"), 0o755)
	os.WriteFile(filepath.Join(dir, "file"), []byte("y"), 0o644)
	os.Symlink("loop2", filepath.Join(dir, "loop1"))
	os.Symlink("loop1", filepath.Join(dir, "loop2"))
	os.Symlink("nowhere", filepath.Join(dir, "dangling"))
	local, err := NewLocal(LocalConfig{RootDir: dir, Isolation: IsolationNone})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Destroy(context.Background())
	h := workspaceTools(local)
	cases := []struct {
		tool string
		args string
		want string
	}{
		{"read_text_file", `{"path":"loop1"}`, "ELOOP: too many symbolic links encountered, realpath '" + dir + "/loop1'"},
		{"read_text_file", `{"path":"d"}`, "EISDIR: illegal operation on a directory, read"},
		{"read_text_file", `{"path":"dangling"}`, "Parent directory does not exist: " + dir},
		{"write_file", `{"path":"dangling","content":"x"}`, "Parent directory does not exist: " + dir},
		{"write_file", `{"path":"no/f","content":"x"}`, "ENOENT: no such file or directory, open '" + dir + "/no/f'"},
		{"write_file", `{"path":"file/x","content":"x"}`, "ENOTDIR: not a directory, realpath '" + dir + "/file/x'"},
		{"move_file", `{"source":"d","destination":"d/in"}`, "EINVAL: invalid argument, rename '" + dir + "/d' -> '" + dir + "/d/in'"},
		{"move_file", `{"source":"ghost","destination":"g2"}`, "ENOENT: no such file or directory, rename '" + dir + "/ghost' -> '" + dir + "/g2'"},
		{"list_directory", `{"path":"file"}`, "ENOTDIR: not a directory, scandir '" + dir + "/file'"},
		{"list_directory", `{"path":"nope"}`, "ENOENT: no such file or directory, scandir '" + dir + "/nope'"},
		{"create_directory", `{"path":"file"}`, "EEXIST: file already exists, mkdir '" + dir + "/file'"},
		{"get_file_info", `{"path":"nope"}`, "ENOENT: no such file or directory, stat '" + dir + "/nope'"},
	}
	for _, c := range cases {
		res, err := h[c.tool](context.Background(), json.RawMessage(c.args))
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || res.Content[0].Text != c.want {
			t.Errorf("%s %s:\n got %q\nwant %q", c.tool, c.args, res.Content[0].Text, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); err == nil {
		t.Error("a file was created through a dangling link")
	}
}

// workspaceTools returns the 14 file tools bound to b as NewMCPServer binds
// them, one function each.
func workspaceTools(b Backend) map[string]toolFunc {
	h := fstools.Handler(toolsWorkspace(b), nil, fstools.Limits{})
	out := map[string]toolFunc{}
	for i, t := range fstools.Tools(false).Tools() {
		out[t.Name] = func(ctx context.Context, raw json.RawMessage) (*mcp.CallToolResult, error) {
			return h(ctx, mcp.ToolCall{Index: i, Name: t.Name, Arguments: raw})
		}
	}
	return out
}

// toolFunc runs one tool on its raw arguments.
type toolFunc func(ctx context.Context, args json.RawMessage) (*mcp.CallToolResult, error)

// checkToolExtensions checks that the tools see b's fast paths (a one-pass
// listing for every kind, write_file's direct write for Local and its
// scopes, implicit directories for Memory and its scopes) and that b's own
// method set has none of them.
func checkToolExtensions(t *testing.T, b Backend, local bool) {
	t.Helper()
	ws := toolsWorkspace(b)
	if _, ok := ws.(fstools.DirEntryReader); !ok {
		t.Errorf("%T: the tools get no DirEntryReader", b)
	}
	if _, ok := ws.(fstools.DirectWriter); ok != local {
		t.Errorf("%T: DirectWriter %v, want it exactly for Local and its scopes", b, ok)
	}
	if d, ok := ws.(fstools.ImplicitDirs); ok != !local || (ok && !d.ImplicitDirs()) {
		t.Errorf("%T: ImplicitDirs %v, want it exactly for Memory and its scopes", b, ok)
	}
	if _, ok := ws.(fstools.ReadLimiter); !ok {
		t.Errorf("%T: the tools get no ReadLimiter", b)
	}
	for _, ext := range []any{(*fstools.DirEntryReader)(nil), (*fstools.DirectWriter)(nil), (*fstools.ImplicitDirs)(nil)} {
		if reflect.TypeOf(b).Implements(reflect.TypeOf(ext).Elem()) {
			t.Errorf("%T exports %v", b, reflect.TypeOf(ext).Elem())
		}
	}
}

// TestToolExtensionsOfNestedScopes: a scope of a scope has the fast paths
// of its root's kind; a Remote and its scopes have none but the read limit.
func TestToolExtensionsOfNestedScopes(t *testing.T) {
	l := ctLocal(t, LocalConfig{})
	m, err := NewMemory(MemoryConfig{})
	mustOK(t, err)
	for _, c := range []struct {
		b     Backend
		local bool
	}{{l, true}, {m, false}} {
		s1, err := c.b.Scope("a", ScopeOptions{})
		mustOK(t, err)
		s2, err := s1.Scope("b", ScopeOptions{})
		mustOK(t, err)
		checkToolExtensions(t, s2, c.local)
	}
	r, err := NewRemote(RemoteConfig{RootDir: "/ws", Host: "127.0.0.1", HostKeyCallback: ssh.InsecureIgnoreHostKey()})
	mustOK(t, err)
	defer r.Destroy(context.Background())
	rs, err := r.Scope("a", ScopeOptions{})
	mustOK(t, err)
	for _, b := range []Backend{r, rs} {
		ws := toolsWorkspace(b)
		_, dr := ws.(fstools.DirEntryReader)
		_, dw := ws.(fstools.DirectWriter)
		_, id := ws.(fstools.ImplicitDirs)
		_, rl := ws.(fstools.ReadLimiter)
		if dr || dw || id || !rl {
			t.Errorf("%T: DirEntryReader %v, DirectWriter %v, ImplicitDirs %v, ReadLimiter %v", b, dr, dw, id, rl)
		}
	}
}
