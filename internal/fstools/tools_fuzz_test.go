package fstools

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzToolArguments feeds arbitrary arguments to every filesystem tool and
// to exec on a small workspace: no panic, always a result, and nothing
// outside the workspace is read or changed.
func FuzzToolArguments(f *testing.F) {
	for _, s := range []string{
		`{"path":"a.txt"}`, `{"path":"a.txt","head":2}`, `{"path":"a.txt","tail":-1}`, `{"paths":["a.txt","../out/s"]}`,
		`{"path":"n.txt","content":"x"}`, `{"path":"a.txt","edits":[{"oldText":"a","newText":"b"}],"dryRun":true}`,
		`{"path":".","sortBy":"size"}`, `{"path":".","excludePatterns":["*"]}`, `{"path":".","pattern":"**/*"}`,
		`{"source":"a.txt","destination":"b.txt"}`, `{"command":"x","env":{"A":"b"}}`, `null`, `[]`, `{"path":null}`,
	} {
		for i := range fsToolDefs {
			f.Add(uint8(i), s)
		}
	}
	base := f.TempDir()
	root := filepath.Join(base, "root")
	writeFiles(f, base, map[string]string{"out/s": "SECRET\n", "root/a.txt": "a\nb\n", "root/d/e.txt": "e"})
	os.Symlink("../out", filepath.Join(root, "link"))
	ws, err := newRootWorkspace(root)
	if err != nil {
		f.Fatal(err)
	}
	tools := filesystemTools(ws)
	_, execH := newExecTool(func(ctx context.Context, command string, env map[string]string, _ io.Writer) (ExecResult, error) {
		return ExecResult{Stdout: []byte(command)}, nil
	}, Limits{})
	f.Fuzz(func(t *testing.T, which uint8, args string) {
		h := execH
		if int(which) < len(tools) {
			h = tools[which].Handler
		}
		res, err := h(context.Background(), json.RawMessage(args))
		if err != nil || res == nil || len(res.Content) == 0 {
			t.Fatalf("tool %d %q: result %v, error %v", which, args, res, err)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("unencodable result: %v", err)
		}
		if int(which) < len(tools) && strings.Contains(res.Content[0].Text, "SECRET") && !strings.Contains(args, "SECRET") {
			t.Fatalf("outside content leaked: %q", res.Content[0].Text)
		}
		if b, _ := os.ReadFile(filepath.Join(base, "out/s")); string(b) != "SECRET\n" {
			t.Fatalf("outside file changed by %q", args)
		}
		if ents, _ := os.ReadDir(base); len(ents) != 2 {
			t.Fatalf("entries appeared beside the root: %v", ents)
		}
	})
}

// FuzzGlobMatch: the matcher never panics and a literal pattern (no
// metacharacters) matches exactly itself.
func FuzzGlobMatch(f *testing.F) {
	f.Add("**/*.{txt,md}", "a/b.txt")
	f.Add("[!a-z]*", "Zed")
	f.Add("a/**", "a")
	f.Add("{1..3}", "2")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		globMatch(pattern, name)
		if pattern != "" && !strings.ContainsAny(pattern, `*?[]{}\!#`) && name == pattern && !strings.Contains(pattern, "/.") && pattern != "." && pattern != ".." && !strings.HasPrefix(pattern, "./") && !strings.HasPrefix(pattern, "../") {
			if !globMatch(pattern, name) {
				t.Fatalf("literal %q does not match itself", pattern)
			}
		}
	})
}

// FuzzUnifiedPatch: the patch of two texts accounts for every line: its
// context and removed lines rebuild the old text's hunks, and applying it
// is not needed for the check that headers and counts are consistent.
func FuzzUnifiedPatch(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n")
	f.Add("x", "x\n")
	f.Add("", "new")
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a)+len(b) > 4000 {
			return
		}
		p := unifiedPatch("/f", a, b)
		if !strings.HasPrefix(p, "Index: /f\n") {
			t.Fatalf("bad header %q", p)
		}
		var minus, plus int
		for _, l := range strings.Split(p, "\n")[4:] {
			switch {
			case strings.HasPrefix(l, "-"):
				minus++
			case strings.HasPrefix(l, "+"):
				plus++
			}
		}
		if (a == b) != (minus+plus == 0) {
			t.Fatalf("a==b is %v but patch has %d/%d changes:\n%s", a == b, minus, plus, p)
		}
	})
}

// FuzzDecodeUTF8: the output is valid UTF-8 and valid input is unchanged.
func FuzzDecodeUTF8(f *testing.F) {
	f.Add([]byte("h\xe2\x82llo"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := decodeUTF8(b)
		if !utf8.ValidString(s) {
			t.Fatalf("invalid output for %q", b)
		}
		if utf8.Valid(b) && s != string(b) {
			t.Fatalf("valid input changed: %q -> %q", b, s)
		}
	})
}

// FuzzDecodeArgsMatchesJSON: the arguments scanner reads an object exactly
// as encoding/json does (the last of repeated names wins, escaped names are
// decoded) and rejects what encoding/json rejects.
func FuzzDecodeArgsMatchesJSON(f *testing.F) {
	for _, s := range []string{`{"path":"a"}`, `{"path":"a","path":"b"}`, `{"pa\u0074h":1}`, ` { "a" : [1, {"b":2}] } `,
		`{"a":}`, `{"a":1,}`, `[]`, `null`, `{"\ud800":true}`, "{\"\xff\":0}", `{"a":"x"}garbage`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		a := decodeArgs("t", json.RawMessage(raw))
		trimmed := strings.TrimSpace(raw)
		if trimmed == "" || trimmed == "null" || trimmed[0] != '{' {
			return
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(trimmed), &want); err != nil {
			if a.err() == nil {
				t.Fatalf("%q: encoding/json rejects it (%v), decodeArgs accepts it", raw, err)
			}
			return
		}
		if a.err() != nil {
			t.Fatalf("%q: decodeArgs rejects it: %v", raw, a.err())
		}
		if len(a.members) != len(want) {
			t.Fatalf("%q: %d members, encoding/json has %d", raw, len(a.members), len(want))
		}
		for _, m := range a.members {
			w, ok := want[m.name]
			if !ok || string(w) != string(m.value) {
				t.Fatalf("%q: member %q = %s, encoding/json has %s (present %v)", raw, m.name, m.value, w, ok)
			}
		}
	})
}
