package grep

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// referenceText turns rg's answer into what the reference's tool answers:
// UTF-8 decoding with replacement, trim, "No matches found", head limit.
func referenceText(stdout []byte, headLimit int) string {
	out := jsTrim(decodeUTF8(stdout))
	if out == "" {
		return "No matches found"
	}
	lines := strings.Split(out, "\n")
	if headLimit > 0 && len(lines) > headLimit {
		return strings.Join(lines[:headLimit], "\n") + "\n[output truncated to first " + strconv.Itoa(headLimit) +
			" lines; " + strconv.Itoa(len(lines)-headLimit) + " more hidden]"
	}
	return out
}

// TestAgainstRipgrep runs calls beyond the captured corpus through rg
// itself (in path order) on the corpus tree and compares the answers.
func TestAgainstRipgrep(t *testing.T) {
	rg, err := exec.LookPath("rg")
	testenv.Require(t, err == nil, "rg (ripgrep)")
	base, _ := buildCorpus(t)
	rootDir := filepath.Join(base, "root")
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	patterns := []string{
		`\w+ing`, `(?i)FOO|bar`, `^\s+foo`, `[[:upper:]]\w*`, `\bfo\w*`, `foo$`, `o{2}`, `(?-u)\w+$`, `\d{3}`,
		`a.b`, `[^a-z ]+`, `\p{Lu}`, `é`, `(?i)ÉLLO`, `x1|x4`, `\Bo\B`, `t$`, `^$`, `(?s)a.b`, `[a-c&&b-d]`,
		`\x41|\u0042`, `(?i)σ`, `\W\w`, `\S+\s\S+`, `[\p{Greek}\d]+`, `foo\b`, `(?U)f.*o`, `\pL{4,}`, `(?m:^)foo`,
		`(?-m:^)foo`, `\Aa`, `ignored`, `foo(?i:BAR)`, `[^\x00-\x7F]`, `.`, `a{0}b`, `(a|ab)(c|bcd)`,
	}
	type call struct {
		pat     string
		rgArgs  []string
		opts    Options
		headLim int
	}
	var calls []call
	modes := []struct {
		rg   []string
		mode Mode
		ln   bool
	}{{[]string{"-l"}, FilesWithMatches, false}, {[]string{"-c"}, Count, false}, {[]string{"-n"}, Content, true}}
	for i, p := range patterns {
		m := modes[i%len(modes)]
		for _, path := range []string{"", "unicode", "regex", "basic", "bin"} {
			args := append([]string{}, m.rg...)
			args = append(args, "--", p)
			if path != "" {
				args = append(args, path) // no path: rg walks "./" and prints paths without it (stdin is /dev/null)
			}
			calls = append(calls, call{pat: p, rgArgs: args, opts: Options{Pattern: p, Path: path, Mode: m.mode, LineNumbers: m.ln}})
		}
	}
	for _, g := range []string{"*.txt", "!*.md", "**/sub/*", "{a,b}*", "*/[a-c]*", "repo/**", "!repo", "*.{log,txt}", ".*"} {
		calls = append(calls, call{pat: "foo", rgArgs: []string{"-l", "--glob", g, "--", "foo", "."}, opts: Options{Pattern: "foo", Path: ".", Glob: g}})
	}
	for _, ty := range []string{"txt", "markdown", "make", "sh", "json", "yaml", "cpp"} {
		calls = append(calls, call{pat: "foo", rgArgs: []string{"-c", "--type", ty, "--", "foo", "."}, opts: Options{Pattern: "foo", Path: ".", Type: ty, Mode: Count}})
	}
	for _, c := range []struct {
		pat    string
		b, a   int
		path   string
		multil bool
	}{{"match", 1, 3, "ctx", false}, {"x", 0, 1, "ctx", false}, {"foo\\s+\\w", 0, 0, "basic", true}, {"a\\nb", 0, 0, "ml", true},
		{"(?-s)start.+", 1, 1, "ml", true}, {"\\n", 0, 0, "ml/c.txt", true}, {"e\\n^s", 1, 0, "ml", true}} {
		args := []string{"-n"}
		if c.b > 0 {
			args = append(args, "-B", strconv.Itoa(c.b))
		}
		if c.a > 0 {
			args = append(args, "-A", strconv.Itoa(c.a))
		}
		if c.multil {
			args = append(args, "-U", "--multiline-dotall")
		}
		calls = append(calls, call{pat: c.pat, rgArgs: append(args, "--", c.pat, c.path),
			opts: Options{Pattern: c.pat, Path: c.path, Mode: Content, LineNumbers: true, Before: c.b, After: c.a, Multiline: c.multil}})
		args2 := append([]string{"-c"}, args[1:]...)
		calls = append(calls, call{pat: c.pat, rgArgs: append(args2, "--", c.pat, c.path),
			opts: Options{Pattern: c.pat, Path: c.path, Mode: Count, Multiline: c.multil}})
	}
	for _, hl := range []int{1, 3, 50} {
		calls = append(calls, call{pat: "foo", rgArgs: []string{"-n", "-C", "1", "--", "foo", "basic"}, headLim: hl,
			opts: Options{Pattern: "foo", Path: "basic", Mode: Content, LineNumbers: true, Before: 1, After: 1, HeadLimit: hl}})
	}

	for i, c := range calls {
		args := append([]string{"--color=never", "--no-heading", "--with-filename", "--sort", "path"}, c.rgArgs...)
		cmd := exec.Command(rg, args...)
		cmd.Dir = rootDir
		cmd.Env = []string{"HOME=" + rootDir, "PATH=/usr/bin:/bin"}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		rgErr := false
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 2 {
			rgErr = true
		} else if err != nil && !ok {
			t.Fatal(err)
		}
		c.opts.HeadLimit = c.headLim
		c.opts.RootDir = rootDir
		res, ourErr := Search(context.Background(), root, c.opts)
		if rgErr || ourErr != nil {
			if rgErr != (ourErr != nil) {
				t.Errorf("call %d rg %q: rg error %v (%s), ours %v", i, c.rgArgs, rgErr, stderr.String(), ourErr)
			}
			continue
		}
		want := referenceText(stdout.Bytes(), c.headLim)
		if got := res.Format(); got != want {
			t.Errorf("call %d rg %q:\n got %q\nwant %q", i, c.rgArgs, got, want)
		}
	}
}
