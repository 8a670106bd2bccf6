package fstools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/mcp"
)

// newTestTools returns the filesystem tool handlers on a fresh workspace
// directory.
func newTestTools(t testing.TB) (string, map[string]toolFunc) {
	t.Helper()
	dir := t.TempDir()
	ws, err := newRootWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]toolFunc{}
	for _, bt := range filesystemTools(ws) {
		h[bt.Tool.Name] = bt.Handler
	}
	return dir, h
}

func call(t testing.TB, h map[string]toolFunc, tool string, args any) (string, bool) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h[tool](context.Background(), raw)
	if err != nil {
		t.Fatalf("%s: handler error %v", tool, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("%s: empty result", tool)
	}
	return res.Content[0].Text, res.IsError
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestToolsListShape(t *testing.T) {
	want := []string{"read_file", "read_text_file", "read_media_file", "read_multiple_files", "write_file", "edit_file",
		"create_directory", "list_directory", "list_directory_with_sizes", "directory_tree", "move_file", "search_files",
		"get_file_info", "list_allowed_directories"}
	tools := filesystemToolDefinitions()
	if len(tools) != len(want) {
		t.Fatalf("got %d tools, want %d", len(tools), len(want))
	}
	for i, tool := range tools {
		if tool.Name != want[i] {
			t.Errorf("tool %d = %s, want %s", i, tool.Name, want[i])
		}
		var schema map[string]any
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: bad input schema %s (%v)", tool.Name, tool.InputSchema, err)
		}
		if tool.Annotations == nil || tool.Description == "" || tool.OutputSchema == nil {
			t.Errorf("%s: missing annotations, description or output schema", tool.Name)
		}
	}
}

// TestToolsSchemaMatchesReference compares the input schema structure and
// annotations with the official server's tools/list, as the agentbe
// conformance profile does.
func TestToolsSchemaMatchesReference(t *testing.T) {
	b, err := os.ReadFile("../../interop/testdata/conformance/tools-list.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Annotations map[string]any  `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	ours := map[string]mcp.Tool{}
	for _, tool := range filesystemToolDefinitions() {
		ours[tool.Name] = tool
	}
	for _, rt := range ref.Tools {
		got, ok := ours[rt.Name]
		if !ok {
			t.Errorf("missing tool %s", rt.Name)
			continue
		}
		if a, b := schemaStructure(t, got.InputSchema), schemaStructure(t, rt.InputSchema); a != b {
			t.Errorf("%s schema:\n got %s\nwant %s", rt.Name, a, b)
		}
		ann, _ := json.Marshal(got.Annotations)
		var gotAnn map[string]any
		json.Unmarshal(ann, &gotAnn)
		if fmt.Sprint(gotAnn) != fmt.Sprint(rt.Annotations) {
			t.Errorf("%s annotations: got %v want %v", rt.Name, gotAnn, rt.Annotations)
		}
	}
}

func schemaStructure(t *testing.T, raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var strip func(any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, val := range x {
				if k == "description" || k == "title" || k == "$schema" {
					continue
				}
				out[k] = strip(val)
			}
			return out
		case []any:
			for i := range x {
				x[i] = strip(x[i])
			}
		}
		return v
	}
	b, _ := json.Marshal(strip(v)) // map keys are sorted
	return string(b)
}

func TestReadTextHeadTail(t *testing.T) {
	dir, h := newTestTools(t)
	writeFiles(t, dir, map[string]string{"f.txt": "a\r\nb\r\nc\r\n", "n.txt": "x\ny\nz"})
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"path": "f.txt"}, "a\r\nb\r\nc\r\n"},
		{map[string]any{"path": "f.txt", "head": 2}, "a\r\nb\r"},
		{map[string]any{"path": "f.txt", "tail": 2}, "c\n"},
		{map[string]any{"path": "f.txt", "tail": 1}, ""},
		{map[string]any{"path": "f.txt", "tail": -3}, ""},
		{map[string]any{"path": "n.txt", "head": 0.5}, "x"},
		{map[string]any{"path": "n.txt", "tail": 1.2}, "y\nz"},
		{map[string]any{"path": "/n.txt", "head": 10}, "x\ny\nz"},
		{map[string]any{"path": "~/n.txt"}, "x\ny\nz"},
	}
	for _, c := range cases {
		got, isErr := call(t, h, "read_text_file", c.args)
		if isErr || got != c.want {
			t.Errorf("%v: got %q (error %v), want %q", c.args, got, isErr, c.want)
		}
	}
}

// TestTailStreamsFromTheEnd checks tails spanning several read blocks.
func TestTailStreamsFromTheEnd(t *testing.T) {
	dir, h := newTestTools(t)
	var sb strings.Builder
	for i := 0; i < 50000; i++ {
		fmt.Fprintf(&sb, "line %d\r\n", i)
	}
	writeFiles(t, dir, map[string]string{"big.txt": sb.String()})
	got, _ := call(t, h, "read_text_file", map[string]any{"path": "big.txt", "tail": 20001})
	lines := strings.Split(got, "\n")
	if len(lines) != 20001 || lines[0] != "line 30000" || lines[19999] != "line 49999" || lines[20000] != "" {
		t.Fatalf("tail: %d lines, first %q", len(lines), lines[0])
	}
	got, _ = call(t, h, "read_text_file", map[string]any{"path": "big.txt", "head": 3})
	if got != "line 0\r\nline 1\r\nline 2\r" {
		t.Fatalf("head: %q", got)
	}
}

func TestPathEscapesAreDenied(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	writeFiles(t, base, map[string]string{"outside/secret.txt": "SECRET\n", "root/in.txt": "in\n"})
	os.Symlink(filepath.Join(base, "outside"), filepath.Join(root, "out"))
	os.Symlink("../outside/secret.txt", filepath.Join(root, "rel-out"))
	ws, _ := newRootWorkspace(root)
	h := map[string]toolFunc{}
	for _, bt := range filesystemTools(ws) {
		h[bt.Tool.Name] = bt.Handler
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"read_text_file", map[string]any{"path": "../outside/secret.txt"}},
		{"read_text_file", map[string]any{"path": "out/secret.txt"}},
		{"read_text_file", map[string]any{"path": "rel-out"}},
		{"read_media_file", map[string]any{"path": "rel-out"}},
		{"write_file", map[string]any{"path": "out/new.txt", "content": "x"}},
		{"write_file", map[string]any{"path": "rel-out", "content": "x"}},
		{"edit_file", map[string]any{"path": "rel-out", "edits": []any{map[string]any{"oldText": "SECRET", "newText": "x"}}}},
		{"list_directory", map[string]any{"path": "out"}},
		{"directory_tree", map[string]any{"path": "a/../../outside"}},
		{"get_file_info", map[string]any{"path": "rel-out"}},
		{"move_file", map[string]any{"source": "rel-out", "destination": "stolen"}},
		{"move_file", map[string]any{"source": "in.txt", "destination": "out/in.txt"}},
		{"create_directory", map[string]any{"path": "out/newdir"}},
	} {
		got, isErr := call(t, h, tc.tool, tc.args)
		if !isErr {
			t.Errorf("%s %v: not an error: %q", tc.tool, tc.args, got)
		}
		if strings.Contains(got, "SECRET") {
			t.Errorf("%s %v leaked: %q", tc.tool, tc.args, got)
		}
	}
	got, _ := call(t, h, "search_files", map[string]any{"path": ".", "pattern": "**"})
	if strings.Contains(got, "secret") || strings.Contains(got, "rel-out") {
		t.Errorf("search_files listed an outside entry: %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(base, "outside/secret.txt")); string(b) != "SECRET\n" {
		t.Errorf("outside file changed: %q", b)
	}
	if ents, _ := os.ReadDir(filepath.Join(base, "outside")); len(ents) != 1 {
		t.Errorf("outside directory changed: %v", ents)
	}
}

// TestSymlinkLoopsDoNotRecurse: directory_tree and search_files list links
// as entries and never follow them, so loops end.
func TestSymlinkLoopsDoNotRecurse(t *testing.T) {
	dir, h := newTestTools(t)
	writeFiles(t, dir, map[string]string{"a/f.txt": "x"})
	os.Symlink("..", filepath.Join(dir, "a", "up"))
	os.Symlink("self", filepath.Join(dir, "a", "self"))
	got, isErr := call(t, h, "directory_tree", map[string]any{"path": "."})
	if isErr || strings.Count(got, `"name"`) != 4 {
		t.Errorf("directory_tree: %s", got)
	}
	got, isErr = call(t, h, "search_files", map[string]any{"path": ".", "pattern": "**"})
	want := filepath.Join(dir, "a") + "\n" + filepath.Join(dir, "a/f.txt") + "\n" + filepath.Join(dir, "a/up")
	if isErr || got != want {
		t.Errorf("search_files: %q, want %q", got, want)
	}
	_, isErr = call(t, h, "read_text_file", map[string]any{"path": "a/self"})
	if !isErr {
		t.Error("reading a link loop must fail")
	}
}

func TestEditFile(t *testing.T) {
	dir, h := newTestTools(t)
	writeFiles(t, dir, map[string]string{"e.txt": "one\r\ntwo\r\nthree\r\n"})
	os.Chmod(filepath.Join(dir, "e.txt"), 0o640)
	edits := []any{map[string]any{"oldText": "two", "newText": "$& $1 $$"}}
	got, isErr := call(t, h, "edit_file", map[string]any{"path": "e.txt", "edits": edits})
	if isErr || !strings.Contains(got, "-two\n+$& $1 $$\n") {
		t.Fatalf("edit_file: %q", got)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "e.txt"))
	if string(b) != "one\n$& $1 $$\nthree\n" {
		t.Errorf("content %q", b)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "e.txt")); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode changed to %v", fi.Mode())
	}
	// A failing edit writes nothing.
	edits = []any{map[string]any{"oldText": "one", "newText": "ONE"}, map[string]any{"oldText": "nope", "newText": "x"}}
	if got, isErr := call(t, h, "edit_file", map[string]any{"path": "e.txt", "edits": edits}); !isErr || got != "Could not find exact match for edit:\nnope" {
		t.Errorf("failing edit: %q %v", got, isErr)
	}
	if b2, _ := os.ReadFile(filepath.Join(dir, "e.txt")); string(b2) != string(b) {
		t.Errorf("a failed edit changed the file: %q", b2)
	}
	// No temp files are left behind.
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("left over entries: %v", ents)
	}
}

func TestInputValidation(t *testing.T) {
	_, h := newTestTools(t)
	cases := []struct {
		tool string
		args any
		want string
	}{
		{"read_text_file", map[string]any{}, "Invalid input: expected string, received undefined at path"},
		{"read_text_file", map[string]any{"path": "x", "head": "2"}, "Invalid input: expected number, received string at head"},
		{"read_multiple_files", map[string]any{"paths": []any{}}, "Too small: expected array to have >=1 items at paths"},
		{"list_directory_with_sizes", map[string]any{"path": ".", "sortBy": "date"}, `Invalid option: expected one of "name"|"size" at sortBy`},
		{"edit_file", map[string]any{"path": "x"}, "Invalid input: expected array, received undefined at edits"},
		{"edit_file", map[string]any{"path": "x", "edits": []any{map[string]any{"oldText": 1}}}, "at edits[0].oldText"},
		{"write_file", map[string]any{"path": nil, "content": "x"}, "expected string, received null at path"},
		{"read_text_file", []any{1}, "expected object, received array"},
	}
	for _, c := range cases {
		got, isErr := call(t, h, c.tool, c.args)
		if !isErr || !strings.HasPrefix(got, "MCP error -32602: Input validation error: Invalid arguments for tool "+c.tool+": ") || !strings.Contains(got, c.want) {
			t.Errorf("%s %v: got %q", c.tool, c.args, got)
		}
	}
}

func TestNodeErrorTexts(t *testing.T) {
	dir, h := newTestTools(t)
	writeFiles(t, dir, map[string]string{"d/f.txt": "x", "file": "y"})
	os.Symlink("loop2", filepath.Join(dir, "loop1"))
	os.Symlink("loop1", filepath.Join(dir, "loop2"))
	os.Symlink(filepath.Join(dir, "file"), filepath.Join(dir, "abs-inside"))
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_text_file", map[string]any{"path": "loop1"}, "ELOOP: too many symbolic links encountered, realpath '" + dir + "/loop1'"},
		{"move_file", map[string]any{"source": "d", "destination": "d/inner"}, "EINVAL: invalid argument, rename '" + dir + "/d' -> '" + dir + "/d/inner'"},
		{"move_file", map[string]any{"source": "file", "destination": "d/f.txt"}, "Destination already exists: " + dir + "/d/f.txt"},
		{"list_directory", map[string]any{"path": "file"}, "ENOTDIR: not a directory, scandir '" + dir + "/file'"},
		{"create_directory", map[string]any{"path": "file"}, "EEXIST: file already exists, mkdir '" + dir + "/file'"},
		{"write_file", map[string]any{"path": "file/x", "content": ""}, "ENOTDIR: not a directory, realpath '" + dir + "/file/x'"},
		{"read_text_file", map[string]any{"path": "abs-inside"}, "y"},
		{"read_text_file", map[string]any{"path": "C:/x"}, "Access denied - Windows-style path received on a POSIX host: C:/x"},
	}
	for _, c := range cases {
		if got, _ := call(t, h, c.tool, c.args); got != c.want {
			t.Errorf("%s %v:\n got %q\nwant %q", c.tool, c.args, got, c.want)
		}
	}
}

// boundTool is a tool definition together with the function that serves it.
type boundTool struct {
	Tool    mcp.Tool
	Handler toolFunc
}

// toolFunc runs one tool on its raw arguments.
type toolFunc func(ctx context.Context, args json.RawMessage) (*mcp.CallToolResult, error)

// filesystemTools returns the 14 filesystem tools (read_file included)
// bound to ws with the default limits, one function per tool (the tests'
// way to call them).
func filesystemTools(ws Workspace) []boundTool {
	h := Handler(ws, nil, Limits{})
	out := make([]boundTool, len(fsToolDefs))
	for i := range fsToolDefs {
		out[i] = boundTool{Tool: fsToolDefs[i].tool, Handler: func(ctx context.Context, raw json.RawMessage) (*mcp.CallToolResult, error) {
			return h(ctx, mcp.ToolCall{Index: i, Name: fsToolDefs[i].tool.Name, Arguments: raw})
		}}
	}
	return out
}
