//go:build linux

package sandbox

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// TestSignalEndedCommand: signalling or killing a command whose process
// group has no process left is no error, in every mode: the command ended
// (a caller's "has it exited?" and its signal race with the end), or, under
// bwrap, killing the sandbox's init took bwrap with it and bwrap was reaped
// before its group was killed. Kill said "no such process" then, which a
// process's Signal(SIGKILL) passed on (TestProcessStopAndKill failed so
// under load).
func TestSignalEndedCommand(t *testing.T) {
	sbs := map[string]Sandbox{"none": Plain(None)}
	bw, err := NewBwrap()
	testenv.Require(t, err == nil, "a usable bwrap")
	sbs["bwrap"] = bw
	for name, sb := range sbs {
		t.Run(name, func(t *testing.T) {
			root, err := os.OpenRoot(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			c, err := sb.Command(context.Background(), Spec{Shell: "/bin/sh", Command: "true", Root: root, WorkRel: "."})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Done()
			if err := c.Cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if err := c.Started(); err != nil {
				t.Fatal(err)
			}
			if err := c.Cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
				if err := c.Signal(sig); err != nil {
					t.Errorf("Signal(%v) after the end: %v", sig, err)
				}
			}
			if err := c.Kill(); err != nil {
				t.Errorf("Kill after the end: %v", err)
			}
		})
	}
}
