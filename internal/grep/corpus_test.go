package grep

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type corpusFile struct {
	Tree []struct {
		Path   string `json:"path"`
		Kind   string `json:"kind"`
		Text   string `json:"text"`
		Target string `json:"target"`
		Parts  []struct {
			Text   *string `json:"text"`
			B64    string  `json:"b64"`
			Repeat int     `json:"repeat"`
		} `json:"parts"`
	} `json:"tree"`
	Cases []corpusCase `json:"cases"`
}

type corpusCase struct {
	Name     string         `json:"name"`
	Args     map[string]any `json:"args"`
	Security bool           `json:"security"`
	Env      string         `json:"env"`
	Sorted   struct {
		Text    string `json:"text"`
		IsError bool   `json:"isError"`
	} `json:"sorted"`
}

// buildCorpus lays out the reference's tree under a temporary base and
// returns the base.
func buildCorpus(t testing.TB) (string, *corpusFile) {
	t.Helper()
	data, err := os.ReadFile("../../testdata/grep/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var c corpusFile
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	for _, e := range c.Tree {
		p := filepath.Join(base, filepath.FromSlash(e.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch e.Kind {
		case "dir":
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case "symlink":
			if err := os.Symlink(e.Target, p); err != nil {
				t.Fatal(err)
			}
		case "file":
			var b []byte
			if e.Parts == nil {
				b = []byte(e.Text)
			}
			for _, part := range e.Parts {
				var chunk []byte
				if part.Text != nil {
					chunk = []byte(*part.Text)
				} else {
					chunk, err = base64.StdEncoding.DecodeString(part.B64)
					if err != nil {
						t.Fatal(err)
					}
				}
				n := max(part.Repeat, 1)
				for range n {
					b = append(b, chunk...)
				}
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return base, &c
}

// corpusDifferences lists the cases where we deliberately answer otherwise
// than the reference's path-sorted answer, and why.
var corpusDifferences = map[string]string{
	// Schema validation belongs to the MCP tool layer, not to the engine.
	"invalid_missing_pattern":     "tool layer: input validation",
	"invalid_pattern_type":        "tool layer: input validation",
	"invalid_output_mode":         "tool layer: input validation",
	"invalid_head_limit_zero":     "tool layer: input validation",
	"invalid_head_limit_fraction": "tool layer: input validation",
	"invalid_context_negative":    "tool layer: input validation",
	"invalid_case_string":         "tool layer: input validation",
	// The reference runs rg through the exec path; we need no program.
	"rg_missing": "no external program: we answer the search",
	// The reference's command-line footgun filter rejects harmless
	// patterns; ours is no shell command.
	"regex_dangerous_forkbomb":    "no shell: we search for the pattern",
	"regex_dangerous_rm":          "no shell: we search for the pattern",
	"regex_dangerous_rm_via_path": "no shell: we search for the pattern",
	// Node refuses a NUL in a spawn argument; we search for it.
	"pattern_nul": "no spawn: a NUL in the pattern is searched for",
	// An absolute path names a place in the workspace (the project's
	// convention), not a host path.
	"path_absolute_workspace_style": "absolute paths are workspace paths",
}

func corpusOptions(c corpusCase, base string) Options {
	sub := func(s string) string {
		s = strings.ReplaceAll(s, "<ROOT>", filepath.Join(base, "root"))
		return strings.ReplaceAll(s, "<OUTSIDE>", filepath.Join(base, "outside"))
	}
	a := c.Args
	str := func(k string) string { s, _ := a[k].(string); return sub(s) }
	boolean := func(k string) bool { b, _ := a[k].(bool); return b }
	num := func(k string) *int {
		if f, ok := a[k].(float64); ok {
			n := int(f)
			return &n
		}
		return nil
	}
	o := Options{
		Pattern: str("pattern"), Path: str("path"), Glob: str("glob"), Type: str("type"),
		Mode: Mode(str("outputMode")), CaseInsensitive: boolean("caseInsensitive"), Multiline: boolean("multiline"),
		LineNumbers: boolean("lineNumbers"), RootDir: filepath.Join(base, "root"),
	}
	o.Before, o.After = ResolveContext(num("contextBefore"), num("contextAfter"), num("contextAround"))
	if h := num("headLimit"); h != nil {
		o.HeadLimit = *h
	}
	return o
}

// TestCorpus replays every captured call of the reference's grep tool and
// compares our answer with the reference's path-sorted answer.
func TestCorpus(t *testing.T) {
	base, c := buildCorpus(t)
	root, err := os.OpenRoot(filepath.Join(base, "root"))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	pass := 0
	for _, cs := range c.Cases {
		t.Run(cs.Name, func(t *testing.T) {
			opts := corpusOptions(cs, base)
			res, err := Search(context.Background(), root, opts)
			var text string
			isErr := err != nil
			if err != nil {
				text = ToolText(err)
			} else {
				text = res.Format()
			}
			text = strings.ReplaceAll(text, filepath.Join(base, "root"), "<ROOT>")
			if cs.Security {
				// Refused: a path out of the workspace, or a foreign
				// absolute path taken as a workspace path that does not exist.
				if !errors.Is(err, ErrEscape) && !errors.Is(err, ErrNotFound) {
					t.Fatalf("reaches outside the workspace: got %q, %v", text, err)
				}
				if strings.Contains(text, "secret") || strings.Contains(text, "deep outside") {
					t.Fatalf("error reveals outside content: %q", text)
				}
				pass++
				return
			}
			if why, ok := corpusDifferences[cs.Name]; ok {
				if _, isStr := cs.Args["pattern"].(string); !isStr || strings.HasPrefix(why, "tool layer") {
					t.Skip(why)
				}
				if isErr {
					t.Fatalf("%s: want an answer, got error %q", why, text)
				}
				pass++
				return
			}
			if text != cs.Sorted.Text || isErr != cs.Sorted.IsError {
				t.Fatalf("answer differs\n got (err=%v): %q\nwant (err=%v): %q", isErr, text, cs.Sorted.IsError, cs.Sorted.Text)
			}
			pass++
		})
	}
	t.Logf("%d of %d cases pass (%d deliberate differences)", pass, len(c.Cases), len(corpusDifferences))
}
