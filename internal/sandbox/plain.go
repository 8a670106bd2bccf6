package sandbox

import (
	"context"
	"errors"
	"os"

	"github.com/agentbe/agent-backend/internal/beneath"
	"github.com/agentbe/agent-backend/internal/wspath"
)

// Plain returns the sandbox of a mode that runs the shell directly: None,
// or Software (whose path heuristic, CheckSoftwarePaths, is the caller's
// to apply).
func Plain(m Mode) Sandbox { return plainSandbox{m} }

// plainSandbox runs the shell directly in the working directory, reached
// through the descriptor of the directory that was validated (see
// workDirPath), with the environment of commandEnv.
type plainSandbox struct{ m Mode }

func (p plainSandbox) Mode() Mode       { return p.m }
func (p plainSandbox) Launcher() string { return "" }

func (p plainSandbox) Command(ctx context.Context, s Spec) (*Cmd, error) {
	if s.NoNetwork {
		return nil, errors.New("network mode none needs the bwrap isolation mode")
	}
	hostDir := wspath.Join(s.HostRoot, s.WorkRel)
	wd, err := s.Root.OpenFile(s.WorkRel, os.O_RDONLY|beneath.NoWait|beneath.DirOnly, 0)
	if err != nil {
		return nil, err
	}
	env := commandEnv(s.Inherit, s.Shell, map[string]string{"TMPDIR": os.TempDir()}, s.Env, hostDir)
	argv := []string{s.Shell, "-c", s.Command}
	var extra []*os.File
	var gate *os.File
	if _, v2 := s.Cgroup.CgroupFD(); s.Cgroup != nil && !v2 {
		// Under cgroup v1 the shell first waits on descriptor 3 until
		// Started has placed it in its cgroup, then becomes the command's
		// shell exactly as without the gate ($0 the shell).
		var r *os.File
		if r, gate, err = os.Pipe(); err != nil {
			wd.Close()
			return nil, err
		}
		extra = []*os.File{r}
		argv = []string{s.Shell, "-c", gateTrampoline, s.Shell, s.Command}
	}
	c := newCmd(ctx, argv, env, workDirPath(wd, hostDir), extra, []*os.File{wd}, nil)
	c.withCgroup(s.Cgroup, gate, []byte("\n"))
	return c, nil
}

// gateTrampoline holds a plain-mode shell until its gate (descriptor 3)
// opens, closes the gate and runs the command: SHELL -c TRAMPOLINE SHELL
// COMMAND.
const gateTrampoline = `read -r _ <&3; exec 3<&-; exec "$0" -c "$1"`
