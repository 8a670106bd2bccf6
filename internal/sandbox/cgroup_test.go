//go:build linux

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/internal/cgroup"
)

func TestBwrapSetupNetwork(t *testing.T) {
	l := bwrapLayout{bwrap: "/usr/bin/bwrap"}
	spec := Spec{Shell: "/bin/sh", Command: "true"}
	if argv := bwrapSetup(l, spec, nil); !slices.Contains(argv, "--share-net") {
		t.Fatalf("host network: no --share-net in %v", argv)
	}
	spec.NoNetwork = true
	argv := bwrapSetup(l, spec, nil)
	if slices.Contains(argv, "--share-net") || !slices.Contains(argv, "--unshare-all") {
		t.Fatalf("network none: %v", argv)
	}
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := Plain(None).Command(context.Background(), Spec{Shell: "/bin/sh", Command: "true", Root: root,
		WorkRel: ".", NoNetwork: true}); err == nil || !strings.Contains(err.Error(), "bwrap") {
		t.Fatalf("plain mode with network none: %v", err)
	}
}

// fakeCgroupV2 returns a command cgroup of a fake unified hierarchy.
func fakeCgroupV2(t *testing.T) *cgroup.Command {
	t.Helper()
	own := t.TempDir()
	for name, v := range map[string]string{"cgroup.controllers": "memory pids cpu", "cgroup.subtree_control": "",
		"cgroup.procs": "1\n"} {
		os.WriteFile(filepath.Join(own, name), []byte(v), 0o644)
	}
	c, err := cgroup.NewV2(own, false, 1).NewCommand(nil, cgroup.Limits{Pids: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestCgroupV2Placement: under cgroup v2 the clone itself creates the
// process in its cgroup (CLONE_INTO_CGROUP), with no gate and the
// command line unchanged; its own process group stays.
func TestCgroupV2Placement(t *testing.T) {
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	cg := fakeCgroupV2(t)
	fd, _ := cg.CgroupFD()
	c, err := Plain(None).Command(context.Background(), Spec{Shell: "/bin/sh", Command: "true", Root: root,
		WorkRel: ".", Cgroup: cg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Done()
	attr := c.Cmd.SysProcAttr
	if !attr.UseCgroupFD || attr.CgroupFD != fd || !attr.Setpgid {
		t.Fatalf("SysProcAttr = %+v, want UseCgroupFD with fd %d and Setpgid", attr, fd)
	}
	if link, _ := os.Readlink("/proc/self/fd/" + itoa(attr.CgroupFD)); link != cg.Dirs()[0] {
		t.Fatalf("CgroupFD names %q, want %q", link, cg.Dirs()[0])
	}
	if !slices.Equal(c.Cmd.Args, []string{"/bin/sh", "-c", "true"}) || c.gate != nil || len(c.Cmd.ExtraFiles) != 0 {
		t.Fatalf("argv %v gate %v extra %v", c.Cmd.Args, c.gate, c.Cmd.ExtraFiles)
	}
	if bw, err := NewBwrap(); err == nil {
		c, err := bw.Command(context.Background(), Spec{Shell: "/bin/sh", Command: "true", Root: root, WorkRel: ".", Cgroup: cg})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Done()
		if !c.Cmd.SysProcAttr.UseCgroupFD || c.Cmd.SysProcAttr.CgroupFD != fd || c.gate != nil {
			t.Fatalf("bwrap under v2: %+v gate %v", c.Cmd.SysProcAttr, c.gate)
		}
	}
}

// TestCgroupV1Gate: under cgroup v1 a plain-mode shell waits on its gate
// (descriptor 3) and then becomes the command's shell.
func TestCgroupV1Gate(t *testing.T) {
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	dir := t.TempDir()
	cg, err := cgroup.NewV1(map[cgroup.Controller]string{cgroup.Pids: dir}).NewCommand(nil, cgroup.Limits{Pids: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	c, err := Plain(None).Command(context.Background(), Spec{Shell: "/bin/sh", Command: "echo ran", Root: root,
		WorkRel: ".", Cgroup: cg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Done()
	if c.Cmd.SysProcAttr.UseCgroupFD || c.gate == nil || len(c.Cmd.ExtraFiles) != 1 {
		t.Fatalf("no gate under v1: %+v", c.Cmd.SysProcAttr)
	}
	if !slices.Equal(c.Cmd.Args, []string{"/bin/sh", "-c", gateTrampoline, "/bin/sh", "echo ran"}) {
		t.Fatalf("argv = %v", c.Cmd.Args)
	}
	var out strings.Builder
	c.Cmd.Stdout = &out
	if err := c.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.Started(); err != nil {
		t.Fatal(err)
	}
	if err := c.Cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "ran\n" {
		t.Fatalf("output %q", out.String())
	}
	// The fake hierarchy got the shell's pid before it was let go.
	b, _ := os.ReadFile(filepath.Join(cg.Dirs()[0], "cgroup.procs"))
	if string(b) != itoa(c.Cmd.Process.Pid) {
		t.Fatalf("cgroup.procs = %q, want %d", b, c.Cmd.Process.Pid)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
