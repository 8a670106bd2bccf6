package agentbe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/internal/sandbox"
)

// TestSafetyPerIsolation: the workspace-escape class (cd, $HOME, "..",
// export PATH=) is refused where nothing else keeps a command in the
// workspace (software, none) and allowed under bwrap, where the kernel
// does; the dangerous class is refused in every mode, and so is a caller's
// pattern.
func TestSafetyPerIsolation(t *testing.T) {
	type want struct{ none, software, bwrap string } // "ok", "unsafe", "dangerous"
	cases := []struct {
		cmd  string
		want want
		out  string // expected stdout under bwrap, when it runs
	}{
		{"cd src && cat f.txt", want{"unsafe", "unsafe", "ok"}, "in src"},
		{`cd "$HOME" && pwd -P`, want{"unsafe", "unsafe", "ok"}, sandbox.Workspace + "/src"},
		{`(cd "$HOME" && pwd -P)`, want{"unsafe", "unsafe", "ok"}, sandbox.Workspace + "/src"},
		{"cat ../top.txt", want{"unsafe", "unsafe", "ok"}, "at the top"},
		{"pushd .. >/dev/null && ls && popd >/dev/null", want{"unsafe", "unsafe", "ok"}, "src\ntop.txt"},
		{"cat ~/f.txt", want{"unsafe", "unsafe", "ok"}, "in src"},
		{"export PATH=/usr/bin:/bin; echo ok", want{"unsafe", "unsafe", "ok"}, "ok"},
		{"sudo ls", want{"dangerous", "dangerous", "dangerous"}, ""},
		{"echo $(whoami)", want{"dangerous", "dangerous", "dangerous"}, ""},
		{"cp ../top.txt .", want{"dangerous", "dangerous", "dangerous"}, ""},
		{"cd .. && rm -rf *", want{"dangerous", "dangerous", "dangerous"}, ""},
		{"forbidden-tool", want{"dangerous", "dangerous", "dangerous"}, ""},
		{"cat f.txt", want{"ok", "ok", "ok"}, "in src"},
	}
	for _, mode := range []Isolation{IsolationNone, IsolationSoftware, IsolationBwrap} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == IsolationBwrap {
				requireBwrap(t)
			}
			root := t.TempDir()
			mustOK(t, os.MkdirAll(filepath.Join(root, "src"), 0o755))
			mustOK(t, os.WriteFile(filepath.Join(root, "top.txt"), []byte("at the top\n"), 0o644))
			mustOK(t, os.WriteFile(filepath.Join(root, "src", "f.txt"), []byte("in src\n"), 0o644))
			// Confined is set the wrong way round on purpose: the mode
			// decides it, not the caller.
			l := newExecLocal(t, LocalConfig{RootDir: root, Isolation: mode,
				Safety: SafetyPolicy{Blocked: []string{`\bforbidden-tool\b`}, Confined: mode != IsolationBwrap}})
			for _, c := range cases {
				w := map[Isolation]string{IsolationNone: c.want.none, IsolationSoftware: c.want.software, IsolationBwrap: c.want.bwrap}[mode]
				dir := "src"
				if strings.HasPrefix(c.cmd, "cd src") {
					dir = ""
				}
				out, err := l.Exec(context.Background(), c.cmd, ExecOptions{Dir: dir})
				got := map[ErrorCode]string{"": "ok", CodeUnsafeCommand: "unsafe", CodeDangerousOperation: "dangerous"}[CodeOf(err)]
				if got != w {
					t.Errorf("%q: %s (%v), want %s", c.cmd, got, err, w)
					continue
				}
				if got == "ok" && mode == IsolationBwrap && strings.TrimSpace(string(out)) != c.out {
					t.Errorf("%q printed %q, want %q", c.cmd, out, c.out)
				}
			}
		})
	}
}
