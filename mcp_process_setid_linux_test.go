//go:build linux

package agentbe

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// TestMCPProcessSetID: an agent with the MCP process tools (on a bwrap
// scope, as a tenant's) writes a script with write_file that sets the
// set-user-ID and set-group-ID bits every shell way, and runs it with
// process_start, along with a set-id binary already in the scope: the
// process has what exec has (no_new_privs, the seccomp filter, a nosuid
// workspace), the modes are refused, the binary runs without its owner's
// identity, and no set-id file is left on the host.
func TestMCPProcessSetID(t *testing.T) {
	requireBwrap(t)
	testenv.Require(t, os.Geteuid() == 0, "root (to plant a set-id file of another user)")
	idBin, err := exec.LookPath("id")
	if err != nil {
		t.Skip("no id(1)")
	}
	l := newIsoLocal(t, "", IsolationBwrap, true)
	sc, err := l.Scope("users/alice", ScopeOptions{})
	mustOK(t, err)
	dir := filepath.Join(l.RootDir(), "users", "alice")
	mustOK(t, os.MkdirAll(dir, 0o755))
	s := NewMCPServerWith(sc, MCPServerOptions{Processes: true})
	if txt, isErr := mcpCall(t, s, "write_file", map[string]any{"path": "attack.sh", "content": "cp /bin/true a; chmod 4755 a; chmod g+s a\n" +
		"grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; grep -E ' /tmp/agentbe-workspace ' /proc/self/mountinfo\n" +
		"mkdir -m 2755 d; install -m 6755 /bin/true c; ./suid-id; echo attack-done\n"}); isErr {
		t.Fatalf("write_file: %s", txt)
	}
	b, err := os.ReadFile(idBin)
	mustOK(t, err)
	planted := filepath.Join(dir, "suid-id")
	mustOK(t, os.WriteFile(planted, b, 0o755))
	mustOK(t, os.Chown(planted, 4242, 4243))
	mustOK(t, os.Chmod(planted, 0o755|fs.ModeSetuid|fs.ModeSetgid))

	txt, isErr := mcpCall(t, s, "process_start", map[string]any{"command": "sh attack.sh"})
	var st struct{ ID string }
	if json.Unmarshal([]byte(txt), &st); isErr || st.ID == "" {
		t.Fatalf("process_start: %s", txt)
	}
	p, err := sc.Process(context.Background(), st.ID)
	mustOK(t, err)
	p.Wait(context.Background())
	txt, _ = mcpCall(t, s, "process_read", map[string]any{"id": st.ID})
	var rd struct {
		Output []struct{ Text string } `json:"output"`
	}
	mustOK(t, json.Unmarshal([]byte(txt), &rd))
	var out strings.Builder
	for _, o := range rd.Output {
		out.WriteString(o.Text)
	}
	if !strings.Contains(out.String(), "attack-done") || !strings.Contains(out.String(), "uid=") {
		t.Fatalf("output: %q", out.String())
	}
	if strings.Contains(out.String(), "euid=") || strings.Contains(out.String(), "egid=") {
		t.Errorf("the set-id bits took effect: %q", out.String())
	}
	if o := out.String(); !strings.Contains(o, "NoNewPrivs:\t1") || !strings.Contains(o, "Seccomp:\t2") || !strings.Contains(o, "nosuid") {
		t.Errorf("not confined as exec is (no_new_privs, seccomp, nosuid workspace): %q", o)
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err == nil && p != planted && fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			t.Errorf("%s is %v on the host", strings.TrimPrefix(p, dir), fi.Mode())
		}
		return err
	})
	mustOK(t, err)
}
