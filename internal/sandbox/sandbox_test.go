package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

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
	ctx := context.Background()
	spec := Spec{Shell: "/bin/sh", Command: "echo hi", Root: root, HostRoot: "/srv/ws", WorkRel: "a/b",
		Env: map[string]string{"FOO": "1", "HOME": "/nope"}}
	for _, inherit := range []bool{false, true} {
		spec.Inherit = inherit
		c, err := Plain(Software).Command(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.Cmd.Args, []string{"/bin/sh", "-c", "echo hi"}) || !strings.HasPrefix(c.Cmd.Dir, "/proc/self/fd/") {
			t.Fatalf("argv %v dir %q", c.Cmd.Args, c.Cmd.Dir)
		}
		env := c.Cmd.Env
		for _, kv := range []string{"FOO=1", "HOME=/srv/ws/a/b", "PWD=/srv/ws/a/b", "LANG=C.UTF-8"} {
			if !inherit && !slices.Contains(env, kv) || inherit && !slices.Contains(env, kv) && kv != "LANG=C.UTF-8" {
				t.Errorf("inherit=%v: env lacks %s", inherit, kv)
			}
		}
		if got := slices.Contains(env, "AGENTBE_TEST_PROCESS_VAR=secret"); got != inherit {
			t.Errorf("inherit=%v: process variable present = %v", inherit, got)
		}
		c.Done()
	}
	spec.WorkRel = "missing"
	if _, err := Plain(None).Command(ctx, spec); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing work dir: %v", err)
	}
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
		sb, err := NewBwrap()
		if err != nil || sb.Mode() != Bwrap || sb.Launcher() != l1.bwrap {
			t.Fatalf("usable bwrap: %v, %v", sb, err)
		}
	}
}
