package fstools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbe/agent-backend/internal/jsonraw"

	"github.com/agentbe/agent-backend/mcp"
)

// limitServer is a Server with the filesystem tools on a fresh directory
// and an exec tool whose command names the output it produces (see
// fakeOutputs), wired as agentbe.NewMCPServerWith does: the server's
// message limit is the tools' limit.
func limitServer(t *testing.T, lim Limits) (*mcp.Server, string) {
	t.Helper()
	dir := t.TempDir()
	ws, err := newRootWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context, command string, env map[string]string, _ io.Writer) (ExecResult, error) {
		r, ok := fakeOutputs[command]
		if !ok {
			return ExecResult{}, fmt.Errorf("unknown command %q", command)
		}
		return r, nil
	}
	opts := mcp.ServerOptions{MaxMessageBytes: lim.MessageBytes}
	lim.MessageBytes = opts.MessageLimit()
	return mcp.NewServer(mcp.Implementation{Name: "t", Version: "1"}, opts, Tools(true), Handler(ws, run, lim)), dir
}

// Outputs of the fake exec: the worst cases for escaping, and a cut that
// falls inside multi-byte runes.
var fakeOutputs = func() map[string]ExecResult {
	var ctl []byte
	for len(ctl) < 10<<20 {
		for c := byte(1); c < 0x20; c++ {
			if c != '\t' && c != '\n' && c != '\v' && c != '\f' && c != '\r' { // not trimmed
				ctl = append(ctl, c)
			}
		}
	}
	ctl = append([]byte{'x'}, ctl...)
	return map[string]ExecResult{
		"small":    {Stdout: []byte("hello\n")},
		"control":  {Stdout: ctl},                                      // six bytes each, escaped
		"quotes":   {Stdout: bytes.Repeat([]byte(`"\`), 5<<20)},        // two bytes each
		"euro":     {Stdout: bytes.Repeat([]byte("€"), 3<<20)},         // three-byte runes
		"emoji":    {Stdout: []byte("a" + strings.Repeat("😀", 2<<20))}, // four-byte runes, off by one
		"invalid":  {Stdout: bytes.Repeat([]byte{0xff}, 4<<20)},        // \ufffd each
		"capped":   {Stdout: []byte("ok"), StdoutTotal: 200 << 20},     // a runner cut it already
		"fail-big": {Stdout: bytes.Repeat([]byte("o"), 3<<20), Stderr: bytes.Repeat([]byte("\x01"), 1<<20), ExitCode: 2},
		"fail-err": {Stdout: []byte("some output\n"), Stderr: []byte("make: *** error\n"), ExitCode: 2},
		"fail-out": {Stdout: bytes.Repeat([]byte("\""), 2<<20), ExitCode: 1},
		"killed":   {ExitCode: -1},
	}
}()

// callRaw sends one tools/call through s and returns the response bytes and
// its decoded result.
func callRaw(t *testing.T, s *mcp.Server, tool string, args any) ([]byte, mcp.CallToolResult) {
	t.Helper()
	params, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
	req := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + string(params) + `}`)
	resp := s.HandleBytes(context.Background(), req)
	var m struct {
		Result mcp.CallToolResult `json:"result"`
	}
	if err := json.Unmarshal(resp, &m); err != nil {
		t.Fatalf("%s: response is not JSON: %v", tool, err)
	}
	return resp, m.Result
}

// TestExecOutputIsBoundedEscaped: exec's text stays within the exec limit
// once escaped, whatever the output holds, is cut on a rune boundary, and
// ends with a note giving the full length.
func TestExecOutputIsBoundedEscaped(t *testing.T) {
	for _, lim := range []Limits{{}, {ExecOutputBytes: 100 << 10}, {MessageBytes: 512 << 10, ExecOutputBytes: 4 << 20}} {
		s, _ := limitServer(t, lim)
		l := lim.effective()
		for _, cmd := range []string{"control", "quotes", "euro", "emoji", "invalid", "fail-big", "fail-out"} {
			resp, res := callRaw(t, s, "exec", map[string]any{"command": cmd})
			text := res.Content[0].Text
			if len(resp) > l.message {
				t.Errorf("%s: response of %d bytes, over %d", cmd, len(resp), l.message)
			}
			if n := len(escapedText(text)); n > l.single() || n < l.single()-32 {
				t.Errorf("%s (limit %d): text escapes to %d bytes", cmd, l.single(), n)
			}
			if (cmd == "euro" || cmd == "emoji") && strings.ContainsRune(text, utf8.RuneError) {
				t.Errorf("%s: a rune was cut (U+FFFD in the text)", cmd)
			}
			if !strings.Contains(text, "... [Output truncated. Full output was ") {
				t.Errorf("%s: no truncation note in %.200q", cmd, text[max(0, len(text)-200):])
			}
			if strings.HasPrefix(cmd, "fail") != res.IsError {
				t.Errorf("%s: isError %v", cmd, res.IsError)
			}
		}
	}
	s, _ := limitServer(t, Limits{})
	if _, res := callRaw(t, s, "exec", map[string]any{"command": "small"}); res.Content[0].Text != "hello" || res.IsError {
		t.Errorf("small: %+v", res)
	}
	_, res := callRaw(t, s, "exec", map[string]any{"command": "capped"})
	if want := "ok\n\n... [Output truncated. Full output was " + strconv.Itoa(200<<20) + " bytes, showing first 2]"; res.Content[0].Text != want {
		t.Errorf("capped: %q, want %q", res.Content[0].Text, want)
	}
	_, res = callRaw(t, s, "exec", map[string]any{"command": "euro"})
	if want := "Full output was " + strconv.Itoa(9<<20) + " bytes"; !strings.Contains(res.Content[0].Text, want) {
		t.Errorf("euro: note does not say %q", want)
	}
}

// TestExecErrorCarriesBothStreams: a failing command's result has the exit
// code, its standard error and its standard output, each bounded.
func TestExecErrorCarriesBothStreams(t *testing.T) {
	s, _ := limitServer(t, Limits{})
	_, res := callRaw(t, s, "exec", map[string]any{"command": "fail-err"})
	if want := "Command execution failed with exit code 2: make: *** error\n\nstdout:\nsome output"; !res.IsError || res.Content[0].Text != want {
		t.Errorf("fail-err: %q (error %v), want %q", res.Content[0].Text, res.IsError, want)
	}
	_, res = callRaw(t, s, "exec", map[string]any{"command": "killed"})
	if want := "Command execution failed with exit code null: "; res.Content[0].Text != want {
		t.Errorf("killed: %q", res.Content[0].Text)
	}
	// Both streams over the limit: each keeps a part, with its own note.
	_, res = callRaw(t, s, "exec", map[string]any{"command": "fail-big"})
	text := res.Content[0].Text
	errPart, outPart, ok := strings.Cut(strings.TrimPrefix(text, "Command execution failed with exit code 2: "), "\n\nstdout:\n")
	if !ok || !strings.HasPrefix(errPart, "\x01") || !strings.HasPrefix(outPart, "ooo") {
		t.Fatalf("fail-big: %.100q … %.100q", text, text[len(text)-100:])
	}
	for _, p := range []string{errPart, outPart} {
		if !strings.Contains(p, "... [Output truncated. Full output was ") {
			t.Errorf("part without note: …%q", p[max(0, len(p)-100):])
		}
		if n := len(escapedText(p)); n < DefaultMaxExecOutputBytes/3 {
			t.Errorf("a part got only %d of %d bytes", n, DefaultMaxExecOutputBytes)
		}
	}
}

// TestReadsThatWouldNotFitFail: a whole-file read whose result would not
// fit one message fails with an error naming the limit and head/tail; the
// same file read in parts works; read_multiple_files gives the file that
// would not fit an error entry; every response stays within the limit.
func TestReadsThatWouldNotFitFail(t *testing.T) {
	s, dir := limitServer(t, Limits{})
	l := Limits{}.effective()
	lines := strings.Repeat(strings.Repeat("y", 99)+"\n", (5<<20)/100) // 5 MiB of lines
	writeFiles(t, dir, map[string]string{
		"big.txt":    lines,
		"ctl.txt":    strings.Repeat("\x01", 1<<20), // 1 MiB that escapes to 6
		"ok.txt":     strings.Repeat("z", 3<<20),
		"media.png":  strings.Repeat("\x89", 4<<20),
		"second.txt": strings.Repeat("w", 3<<20),
	})
	budget := strconv.Itoa(l.text())
	for _, tool := range []string{"read_text_file", "read_file"} {
		for _, name := range []string{"big.txt", "ctl.txt"} {
			resp, res := callRaw(t, s, tool, map[string]any{"path": name})
			text := res.Content[0].Text
			if !res.IsError || !strings.Contains(text, budget) || !strings.Contains(text, "head or tail") ||
				!strings.Contains(text, filepath.Join(dir, name)) || !strings.HasPrefix(text, "File too large: "+tool) {
				t.Errorf("%s %s: %.300q", tool, name, text)
			}
			if len(resp) > l.message {
				t.Errorf("%s %s: response of %d bytes", tool, name, len(resp))
			}
		}
	}
	if _, res := callRaw(t, s, "read_text_file", map[string]any{"path": "big.txt", "head": 3}); res.IsError ||
		res.Content[0].Text != strings.Repeat(strings.Repeat("y", 99)+"\n", 3)[:299] {
		t.Errorf("head 3: %.200q", res.Content[0].Text)
	}
	if _, res := callRaw(t, s, "read_text_file", map[string]any{"path": "big.txt", "tail": 2}); res.IsError {
		t.Errorf("tail 2: %.200q", res.Content[0].Text)
	}
	_, res := callRaw(t, s, "read_text_file", map[string]any{"path": "big.txt", "head": 1e6})
	if !res.IsError || !strings.Contains(res.Content[0].Text, "the lines asked for") {
		t.Errorf("head 1e6: %.300q", res.Content[0].Text)
	}
	if resp, res := callRaw(t, s, "read_text_file", map[string]any{"path": "ok.txt"}); res.IsError || len(resp) > l.message {
		t.Errorf("3 MiB file: error %v, %d bytes", res.IsError, len(resp))
	}

	resp, res := callRaw(t, s, "read_multiple_files", map[string]any{"paths": []string{"ok.txt", "second.txt", "missing.txt"}})
	text := res.Content[0].Text
	if res.IsError || len(resp) > l.message || !strings.HasPrefix(text, "ok.txt:\nzzz") ||
		!strings.Contains(text, "second.txt: Error - File too large: "+filepath.Join(dir, "second.txt")+" would take read_multiple_files over the "+budget) ||
		!strings.Contains(text, "missing.txt: Error - ENOENT") {
		t.Errorf("read_multiple_files: %d bytes, %q … %q", len(resp), text[:40], text[len(text)-400:])
	}

	_, res = callRaw(t, s, "read_media_file", map[string]any{"path": "media.png"})
	if !res.IsError || !strings.Contains(res.Content[0].Text, "read_media_file returns files of at most "+strconv.FormatInt(l.media(), 10)) {
		t.Errorf("read_media_file: %.300q", res.Content[0].Text)
	}
	os.WriteFile(filepath.Join(dir, "media.png"), []byte(strings.Repeat("\x89", 2<<20)), 0o644)
	if resp, res := callRaw(t, s, "read_media_file", map[string]any{"path": "media.png"}); res.IsError || len(resp) > l.message {
		t.Errorf("2 MiB media: error %v, %d bytes", res.IsError, len(resp))
	}
}

// TestEditWithHugeDiff: an edit is applied even when its diff cannot be
// shown; a dry run of it fails and writes nothing.
func TestEditWithHugeDiff(t *testing.T) {
	s, dir := limitServer(t, Limits{})
	old := strings.Repeat("a\n", 2<<20)
	writeFiles(t, dir, map[string]string{"f.txt": old})
	edit := map[string]any{"path": "f.txt", "edits": []map[string]string{{"oldText": old, "newText": strings.Repeat("b\n", 2<<20)}}}
	edit["dryRun"] = true
	_, res := callRaw(t, s, "edit_file", edit)
	if got, _ := os.ReadFile(filepath.Join(dir, "f.txt")); !res.IsError || !strings.Contains(res.Content[0].Text, "nothing was written") || string(got) != old {
		t.Errorf("dry run: %q", res.Content[0].Text)
	}
	edit["dryRun"] = false
	resp, res := callRaw(t, s, "edit_file", edit)
	if got, _ := os.ReadFile(filepath.Join(dir, "f.txt")); res.IsError || !strings.Contains(res.Content[0].Text, "were applied") ||
		string(got) != strings.Repeat("b\n", 2<<20) || len(resp) > mcp.DefaultMaxMessageBytes {
		t.Errorf("edit: %q (%d bytes)", res.Content[0].Text, len(resp))
	}
}

// escapedText is s as a JSON string without its quotes.
func escapedText(s string) string {
	b := jsonraw.AppendString(nil, s)
	return string(b[1 : len(b)-1])
}
