package fstools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/mcp"
)

// goldenCase is one case of interop/testdata/conformance/golden.json, captured from the
// official filesystem server by the conformance pack.
type goldenCase struct {
	Name    string          `json:"name"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Loose   bool            `json:"loose"`
	Session string          `json:"session"`
	Action  string          `json:"action"`
	Result  json.RawMessage `json:"result"`
}

// byDesign are the cases where agentbe's single-root rules differ from the
// official server on purpose (README of the conformance pack); their text is
// not compared, only that nothing outside the root is revealed.
var byDesign = map[string]bool{
	"rt_outside_abs": true, "rt_dotdot_traversal_abs": true, "rt_dotdot_traversal_rel": true,
	"rt_prefix_sibling": true, "rt_etc_passwd": true, "rt_symlink_outside": true,
	"rt_via_symlinked_dir_outside": true, "media_outside": true, "rmf_mixed_errors": true,
	"ld_outside": true, "ld_outside_via_link": true, "lds_links": true, "dt_outside": true,
	"sf_outside": true, "gfi_outside": true, "wf_outside": true, "wf_dotdot_outside": true,
	"wf_through_outside_symlink": true, "ef_outside": true, "ef_through_outside_symlink": true,
	"cd_outside": true, "mv_to_outside": true, "mv_from_outside": true,
}

// pendingEncoding lists cases that depend on a change requested in the
// protocol engineer's encoder (an empty embedded resource must encode as
// "blob":""); they are reported, not failed, while the encoder still writes
// "text":"".
var pendingEncoding = map[string]bool{"media_empty_file": true}

func encodesEmptyBlobAsText() bool {
	b, _ := json.Marshal(mcp.Content{Type: "resource", Resource: &mcp.ResourceContents{URI: "file:///x"}})
	return strings.Contains(string(b), `"text"`)
}

var fixedTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// buildFixture recreates the conformance pack's main fixture under base.
func buildFixture(t testing.TB, base string) {
	t.Helper()
	wav := func() []byte {
		const n = 64
		b := make([]byte, 44+n)
		copy(b, "RIFF")
		binary.LittleEndian.PutUint32(b[4:], 36+n)
		copy(b[8:], "WAVEfmt ")
		binary.LittleEndian.PutUint32(b[16:], 16)
		binary.LittleEndian.PutUint16(b[20:], 1)
		binary.LittleEndian.PutUint16(b[22:], 1)
		binary.LittleEndian.PutUint32(b[24:], 8000)
		binary.LittleEndian.PutUint32(b[28:], 8000)
		binary.LittleEndian.PutUint16(b[32:], 1)
		binary.LittleEndian.PutUint16(b[34:], 8)
		copy(b[36:], "data")
		binary.LittleEndian.PutUint32(b[40:], n)
		for i := 0; i < n; i++ {
			p := i % 16
			v := 128 - 48
			if p < 8 {
				v += p * 12
			} else {
				v += (16 - p) * 12
			}
			b[44+i] = byte(v)
		}
		return b
	}
	mp3 := append([]byte{0x49, 0x44, 0x33, 0x03, 0, 0, 0, 0, 0, 0, 0xff, 0xfb, 0x90, 0x64}, make([]byte, 28)...)
	bytes256 := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i % 256)
		}
		return b
	}
	var large strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&large, "Line %05d: the quick brown fox jumps over the lazy dog\n", i)
	}
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
	type link struct{ target string }
	type dir struct{}
	entries := []struct {
		rel  string
		data any
		mode os.FileMode
	}{
		{"outside/secret.txt", "TOP SECRET\n", 0},
		{"outside/sub/x.txt", "outside x\n", 0},
		{"root2/other.txt", "sibling dir whose name starts with \"root\"\n", 0},
		{"root/hello.txt", "Hello, world!\nSecond line\nThird line\n", 0},
		{"root/crlf.txt", "line one\r\nline two\r\nline three\r\n", 0},
		{"root/nonl.txt", "alpha\nbeta\ngamma", 0},
		{"root/empty.txt", "", 0},
		{"root/with space.txt", "spaced\n", 0},
		{"root/.hidden", "hidden file\n", 0},
		{"root/ünïcödé.txt", "Unicode content: héllo wörld ✓ 日本語 😀\n", 0},
		{"root/日本語/ファイル.txt", "こんにちは\n", 0},
		{"root/cafe\u0301.txt", "nfd-named file\n", 0},
		{"root/amb/\u212B.txt", "angstrom sign\n", 0},
		{"root/amb/A\u030A.txt", "A + combining ring\n", 0},
		{"root/large.txt", large.String(), 0},
		{"root/media/pixel.png", png, 0},
		{"root/media/PHOTO.PNG", png, 0},
		{"root/media/tone.wav", wav(), 0},
		{"root/media/clip.mp3", mp3, 0},
		{"root/media/drawing.svg", `<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"><rect width="1" height="1" fill="red"/></svg>` + "\n", 0},
		{"root/media/data.bin", bytes256(300), 0},
		{"root/media/notes.txt", "plain text, not media\n", 0},
		{"root/media/noext", "no extension\n", 0},
		{"root/dir1/a.txt", "a\n", 0},
		{"root/dir1/b.md", "# B\n", 0},
		{"root/dir1/sub/c.txt", "c\n", 0},
		{"root/dir1/sub/deep/d.txt", "d\n", 0},
		{"root/dir1/node_modules/pkg/index.js", "module.exports = 1;\n", 0},
		{"root/dir1/.git/config", "[core]\n", 0},
		{"root/sizes/big.bin", bytes256(10000), 0},
		{"root/sizes/mid.txt", strings.Repeat("m", 2048), 0},
		{"root/sizes/small.txt", "12345", 0},
		{"root/sizes/Zeta.txt", "abcde", 0},
		{"root/sizes/empty.dat", "", 0},
		{"root/sizes/ñandú.txt", "xyz", 0},
		{"root/sizes/a_very_long_file_name_exceeding_thirty_characters.txt", "1", 0},
		{"root/links/inside.txt", link{"../hello.txt"}, 0},
		{"root/links/outside.txt", link{filepath.Join(base, "outside/secret.txt")}, 0},
		{"root/links/dangling", link{"../does-not-exist.txt"}, 0},
		{"root/dirlinks/todir", link{"../dir1"}, 0},
		{"root/dirlinks/outdir", link{"../../outside"}, 0},
		{"root/edit/code.py", "def greet(name):\n    if name:\n        print(\"Hello, \" + name)\n    else:\n        print(\"Hello, world\")\n    return None\n", 0},
		{"root/edit/crlf_edit.txt", "first\r\nsecond\r\nthird\r\n", 0},
		{"root/edit/nonl_edit.txt", "one\ntwo\nthree", 0},
		{"root/edit/dup.txt", "foo\nbar\nfoo\n", 0},
		{"root/edit/ticks.md", "Some text\n", 0},
		{"root/edit/dollar.txt", "price: X\n", 0},
		{"root/edit/empty_old.txt", "abc\n", 0},
		{"root/write/over.txt", "original content\n", 0o600},
		{"root/write/target.txt", "target original\n", 0},
		{"root/write/link_to_target.txt", link{"target.txt"}, 0},
		{"root/move/src.txt", "to be moved\n", 0},
		{"root/move/existing.txt", "already here\n", 0},
		{"root/move/dir_src/f.txt", "in dir\n", 0},
		{"root/move/linktarget.txt", "link target\n", 0},
		{"root/move/link.txt", link{"linktarget.txt"}, 0},
		{"root/empty_dir", dir{}, 0},
	}
	for _, e := range entries {
		p := filepath.Join(base, e.rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var data []byte
		switch v := e.data.(type) {
		case link:
			if err := os.Symlink(v.target, p); err != nil {
				t.Fatal(err)
			}
			continue
		case dir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		case string:
			data = []byte(v)
		case []byte:
			data = v
		}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		os.Chtimes(p, fixedTime, fixedTime)
	}
}

var (
	jsDateRe  = regexp.MustCompile(`\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{2} -?\d{4,6} \d{2}:\d{2}:\d{2} GMT[+-]\d{4}(?: \([^)]*\))?`)
	tmpRe     = regexp.MustCompile(`\.[0-9a-f]{32}\.tmp\b`)
	dirSizeRe = regexp.MustCompile(`(?m)^size: \d+$`)
)

// normalize applies the conformance pack's normalisations to every string.
func normalize(v any, repl *strings.Replacer) any {
	switch x := v.(type) {
	case string:
		s := jsDateRe.ReplaceAllString(repl.Replace(x), "<DATE>")
		s = tmpRe.ReplaceAllString(s, ".<RAND>.tmp")
		if strings.Contains(s, "\nisDirectory: true") {
			s = dirSizeRe.ReplaceAllString(s, "size: <DIRSIZE>")
		}
		return s
	case []any:
		for i := range x {
			x[i] = normalize(x[i], repl)
		}
	case map[string]any:
		for k := range x {
			x[k] = normalize(x[k], repl)
		}
	}
	return v
}

func loadGolden(t testing.TB) []goldenCase {
	t.Helper()
	b, err := os.ReadFile("../../interop/testdata/conformance/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestGoldenReplay runs every exactly compared main-session case of the
// official server's golden data through the tools, in order, on a fresh
// fixture, and compares the results after the pack's normalisations.
func TestGoldenReplay(t *testing.T) {
	t.Run("DirEntryReader", func(t *testing.T) { testGoldenReplay(t, false) })
	t.Run("NamesOnly", func(t *testing.T) { testGoldenReplay(t, true) })
}

func testGoldenReplay(t *testing.T, namesOnlyWS bool) {
	base := t.TempDir()
	buildFixture(t, base)
	root := filepath.Join(base, "root")
	ws, err := newRootWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	var w Workspace = ws
	if namesOnlyWS {
		w = namesOnly{ws}
	}
	tools := map[string]toolFunc{}
	for _, bt := range filesystemTools(w) {
		tools[bt.Tool.Name] = bt.Handler
	}
	toPlaceholders := strings.NewReplacer(root, "<ROOT>", filepath.Join(base, "outside"), "<OUTSIDE>", base, "<BASE>")
	fromPlaceholders := strings.NewReplacer("<ROOT>", root, "<OUTSIDE>", filepath.Join(base, "outside"), "<BASE>", base)
	ran := 0
	for _, c := range loadGolden(t) {
		if c.Session != "" || c.Action != "" || byDesign[c.Name] || c.Name == "unknown_tool" {
			continue
		}
		h := tools[c.Tool]
		if h == nil {
			t.Errorf("%s: no tool %s", c.Name, c.Tool)
			continue
		}
		args := json.RawMessage(fromPlaceholders.Replace(string(c.Args)))
		res, err := h(context.Background(), args)
		if err != nil {
			t.Errorf("%s: handler error %v", c.Name, err)
			continue
		}
		ran++
		gotJSON, err := json.Marshal(res)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		var got, want map[string]any
		json.Unmarshal(gotJSON, &got)
		json.Unmarshal(c.Result, &want)
		got = normalize(got, toPlaceholders).(map[string]any)
		want = normalize(want, strings.NewReplacer()).(map[string]any)
		if c.Loose {
			if got["isError"] != true {
				t.Errorf("%s: want an error, got %s", c.Name, gotJSON)
			}
			continue
		}
		if !reflect.DeepEqual(got, want) {
			if pendingEncoding[c.Name] && encodesEmptyBlobAsText() {
				t.Logf("%s: pending the protocol encoder change for empty resource blobs", c.Name)
				continue
			}
			g, _ := json.MarshalIndent(got, "", " ")
			w, _ := json.MarshalIndent(want, "", " ")
			t.Errorf("%s [%s %s]:\n got: %s\nwant: %s", c.Name, c.Tool, c.Args, g, w)
		}
	}
	if ran < 150 {
		t.Errorf("only %d cases ran", ran)
	}
}

// TestGoldenByDesignKeepsOutsideSecret runs the by-design cases (paths that
// leave the root) and checks that none of them reveals or changes the
// content outside the root.
func TestGoldenByDesignKeepsOutsideSecret(t *testing.T) {
	base := t.TempDir()
	buildFixture(t, base)
	root := filepath.Join(base, "root")
	ws, err := newRootWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]toolFunc{}
	for _, bt := range filesystemTools(ws) {
		tools[bt.Tool.Name] = bt.Handler
	}
	fromPlaceholders := strings.NewReplacer("<ROOT>", root, "<OUTSIDE>", filepath.Join(base, "outside"), "<BASE>", base)
	for _, c := range loadGolden(t) {
		if !byDesign[c.Name] {
			continue
		}
		res, _ := tools[c.Tool](context.Background(), json.RawMessage(fromPlaceholders.Replace(string(c.Args))))
		b, _ := json.Marshal(res)
		if bytes.Contains(b, []byte("TOP SECRET")) || bytes.Contains(b, []byte("VE9QIFNFQ1JFV")) {
			t.Errorf("%s revealed the outside secret: %s", c.Name, b)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(base, "outside/secret.txt")); string(got) != "TOP SECRET\n" {
		t.Errorf("outside secret changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(base, "outside/evil.txt")); err == nil {
		t.Error("a file was written outside the root")
	}
}
