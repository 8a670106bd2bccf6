package agentbe

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/internal/testenv"
)

func TestSelectSandbox(t *testing.T) {
	okLayout := bwrapLayout{bwrap: "/usr/bin/bwrap"}
	usable := func() (bwrapLayout, error) { return okLayout, nil }
	unusable := func() (bwrapLayout, error) {
		return bwrapLayout{}, errors.New("probe sandbox failed: bwrap: No permissions to create a new namespace")
	}
	tests := []struct {
		mode     Isolation
		probe    func() (bwrapLayout, error)
		want     Isolation
		wantCode ErrorCode
		wantLog  string
	}{
		{"", usable, IsolationBwrap, "", "bwrap"},
		{IsolationAuto, usable, IsolationBwrap, "", "bwrap"},
		{IsolationAuto, unusable, IsolationSoftware, "", "software"},
		{"", unusable, IsolationSoftware, "", "software"},
		{IsolationBwrap, usable, IsolationBwrap, "", ""},
		{IsolationBwrap, unusable, "", CodeMissingUtilities, ""},
		{IsolationSoftware, usable, IsolationSoftware, "", ""},
		{IsolationNone, usable, IsolationNone, "", ""},
		{"chroot", usable, "", CodeInvalidConfiguration, ""},
	}
	for _, tt := range tests {
		var logged []string
		sb, err := selectSandbox(tt.mode, tt.probe, func(m Isolation, reason string) {
			logged = append(logged, string(m)+": "+reason)
		})
		name := string(tt.mode) + "/" + string(tt.want)
		if tt.wantCode != "" {
			if CodeOf(err) != tt.wantCode {
				t.Errorf("%s: err = %v, want code %s", name, err, tt.wantCode)
			}
			if tt.wantCode == CodeMissingUtilities && (!errors.Is(err, ErrMissingUtility) || !strings.Contains(err.Error(), "No permissions")) {
				t.Errorf("%s: error %v lacks sentinel or reason", name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if sb.mode() != tt.want {
			t.Errorf("%s: mode %s", name, sb.mode())
		}
		switch {
		case tt.wantLog == "" && len(logged) != 0:
			t.Errorf("%s: unexpected log %v", name, logged)
		case tt.wantLog != "" && (len(logged) != 1 || !strings.HasPrefix(logged[0], tt.wantLog+": ")):
			t.Errorf("%s: log %v, want one line choosing %s", name, logged, tt.wantLog)
		}
		if tt.want == IsolationSoftware && tt.wantLog != "" && !strings.Contains(logged[0], "No permissions") {
			t.Errorf("%s: log %q does not say why", name, logged[0])
		}
	}
}

// TestProbeBwrapFailure runs the real probe against a bwrap that cannot
// create namespaces (a stand-in script failing like bwrap does in a
// restricted container).
func TestProbeBwrapFailure(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "bwrap")
	script := "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := probeBwrap(fake)
	if err == nil || !strings.Contains(err.Error(), "No permissions to creating new namespace") {
		t.Fatalf("probe error = %v", err)
	}
	if _, err := probeBwrap(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("probe of a missing binary succeeded")
	}
}

func TestPlainSandbox(t *testing.T) {
	t.Setenv("AGENTBE_TEST_PROCESS_VAR", "secret")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	spec := sandboxSpec{Shell: "/bin/sh", Command: "echo hi", Root: root, HostRoot: "/srv/ws", WorkRel: "a/b",
		Env: map[string]string{"FOO": "1", "HOME": "/nope"}}
	for _, inherit := range []bool{false, true} {
		spec.Inherit = inherit
		la, err := plainSandbox{IsolationSoftware}.prepare(spec)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(la.argv, []string{"/bin/sh", "-c", "echo hi"}) || !strings.HasPrefix(la.dir, "/proc/self/fd/") {
			t.Fatalf("argv %v dir %q", la.argv, la.dir)
		}
		for _, kv := range []string{"FOO=1", "HOME=/srv/ws/a/b", "PWD=/srv/ws/a/b", "LANG=C.UTF-8"} {
			if !inherit && !slices.Contains(la.env, kv) || inherit && !slices.Contains(la.env, kv) && kv != "LANG=C.UTF-8" {
				t.Errorf("inherit=%v: env lacks %s", inherit, kv)
			}
		}
		if got := slices.Contains(la.env, "AGENTBE_TEST_PROCESS_VAR=secret"); got != inherit {
			t.Errorf("inherit=%v: process variable present = %v", inherit, got)
		}
		la.release()
	}
	spec.WorkRel = "missing"
	if _, err := (plainSandbox{IsolationNone}).prepare(spec); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing work dir: %v", err)
	}
}

// requireBwrap returns the cached probe result, skipping the test when bwrap
// is unusable here, unless CI is set: CI installs bubblewrap, so there an
// unusable bwrap fails the test.
func requireBwrap(t testing.TB) bwrapLayout {
	t.Helper()
	l, err := detectBwrap()
	if err != nil {
		testenv.Require(t, false, fmt.Sprintf("a usable bwrap (%v)", err))
	}
	return l
}

func TestDetectBwrapCached(t *testing.T) {
	l1, err1 := detectBwrap()
	l2, err2 := detectBwrap()
	if !slices.Equal(l1.sys, l2.sys) || (err1 == nil) != (err2 == nil) {
		t.Fatal("probe result not stable")
	}
	if _, err := exec.LookPath("bwrap"); err != nil && err1 == nil {
		t.Fatal("probe succeeded without bwrap on PATH")
	}
	if err1 == nil {
		sb, err := newSandbox(IsolationAuto)
		if err != nil || sb.mode() != IsolationBwrap {
			t.Fatalf("auto with usable bwrap: %v, %v", sb, err)
		}
	}
}
