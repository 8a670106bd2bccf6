package agentbe_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	agentbe "github.com/agentbe/agent-backend"
)

// grepCorpus is testdata/grep/reference.json: the reference's grep tool
// (0.13.2, ripgrep 13) answering each case on a tree.
type grepCorpus struct {
	Tool json.RawMessage `json:"tool"`
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
	Cases []struct {
		Name     string         `json:"name"`
		Args     map[string]any `json:"args"`
		Security bool           `json:"security"`
		Sorted   struct {
			Text    string `json:"text"`
			IsError bool   `json:"isError"`
		} `json:"sorted"`
		OrderStable bool `json:"orderStable"`
	} `json:"cases"`
}

func loadGrepCorpus(t *testing.T) (base string, c *grepCorpus) {
	t.Helper()
	data, err := os.ReadFile("testdata/grep/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	c = new(grepCorpus)
	if err := json.Unmarshal(data, c); err != nil {
		t.Fatal(err)
	}
	base = t.TempDir()
	for _, e := range c.Tree {
		p := filepath.Join(base, filepath.FromSlash(e.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch e.Kind {
		case "dir":
			err = os.MkdirAll(p, 0o755)
		case "symlink":
			err = os.Symlink(e.Target, p)
		case "file":
			b := []byte(e.Text)
			if e.Parts != nil {
				b = nil
			}
			for _, part := range e.Parts {
				chunk := []byte(nil)
				if part.Text != nil {
					chunk = []byte(*part.Text)
				} else if chunk, err = base64.StdEncoding.DecodeString(part.B64); err != nil {
					t.Fatal(err)
				}
				for range max(part.Repeat, 1) {
					b = append(b, chunk...)
				}
			}
			err = os.WriteFile(p, b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return base, c
}

// grepToolDifferences are the cases we answer otherwise on purpose (the
// engine's own corpus test, internal/grep, says why for each).
var grepToolDifferences = map[string]bool{
	"rg_missing": true, "regex_dangerous_forkbomb": true, "regex_dangerous_rm": true,
	"regex_dangerous_rm_via_path": true, "pattern_nul": true, "path_absolute_workspace_style": true,
}

// TestGrepMCPToolCorpus calls the grep tool of NewMCPServer on a Local
// backend with every captured case, invalid arguments included, and
// compares the result with the reference's (path-sorted) answer byte for
// byte; cases whose output order the reference leaves to chance are
// compared as sorted in the corpus, which is the order we print.
func TestGrepMCPToolCorpus(t *testing.T) {
	base, c := loadGrepCorpus(t)
	root := filepath.Join(base, "root")
	b, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: root, Isolation: agentbe.IsolationSoftware})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Destroy(context.Background())
	srv := agentbe.NewMCPServer(b)

	// tools/list shows the reference's input schema exactly.
	list := srv.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	var lr struct {
		Result struct {
			Tools []map[string]json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(list, &lr); err != nil {
		t.Fatal(err)
	}
	var ref map[string]json.RawMessage
	json.Unmarshal(c.Tool, &ref)
	found := false
	for _, tl := range lr.Result.Tools {
		if string(tl["name"]) == `"grep"` {
			found = true
			if string(tl["inputSchema"]) != compactJSON(t, ref["inputSchema"]) {
				t.Fatalf("grep inputSchema differs:\n got %s\nwant %s", tl["inputSchema"], compactJSON(t, ref["inputSchema"]))
			}
			if string(tl["execution"]) != compactJSON(t, ref["execution"]) {
				t.Fatalf("grep execution: %s", tl["execution"])
			}
		}
	}
	if !found || len(lr.Result.Tools) != 16 {
		t.Fatalf("grep not listed beside the 15 others: %d tools", len(lr.Result.Tools))
	}

	pass := 0
	for _, cs := range c.Cases {
		t.Run(cs.Name, func(t *testing.T) {
			var args bytes.Buffer
			enc := json.NewEncoder(&args)
			enc.SetEscapeHTML(false)
			enc.Encode(cs.Args)
			s := strings.ReplaceAll(strings.TrimSpace(args.String()), "<ROOT>", root)
			s = strings.ReplaceAll(s, "<OUTSIDE>", filepath.Join(base, "outside"))
			req := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"grep","arguments":` + s + `}}`
			out := srv.HandleBytes(context.Background(), []byte(req))
			var r struct {
				Result struct {
					Content []struct{ Text string } `json:"content"`
					IsError bool                    `json:"isError"`
				} `json:"result"`
			}
			if err := json.Unmarshal(out, &r); err != nil || len(r.Result.Content) != 1 {
				t.Fatalf("bad answer %s", out)
			}
			text := strings.ReplaceAll(r.Result.Content[0].Text, root, "<ROOT>")
			switch {
			case cs.Security:
				if !r.Result.IsError || strings.Contains(text, "secret") || strings.Contains(text, "deep outside") {
					t.Fatalf("reaches outside the workspace: %q", text)
				}
			case grepToolDifferences[cs.Name]:
				t.Skip("deliberate difference")
			case text != cs.Sorted.Text || r.Result.IsError != cs.Sorted.IsError:
				t.Fatalf("answer differs\n got (err=%v): %q\nwant (err=%v): %q", r.Result.IsError, text, cs.Sorted.IsError, cs.Sorted.Text)
			}
			pass++
		})
	}
	t.Logf("%d of %d cases equal to the reference", pass, len(c.Cases))
}

func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
