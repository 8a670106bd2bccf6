package sandbox

import (
	"context"
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
	hostDir := wspath.Join(s.HostRoot, s.WorkRel)
	wd, err := s.Root.OpenFile(s.WorkRel, os.O_RDONLY|beneath.NoWait|beneath.DirOnly, 0)
	if err != nil {
		return nil, err
	}
	env := commandEnv(s.Inherit, s.Shell, map[string]string{"TMPDIR": os.TempDir()}, s.Env, hostDir)
	return newCmd(ctx, []string{s.Shell, "-c", s.Command}, env, workDirPath(wd, hostDir),
		nil, []*os.File{wd}, nil), nil
}
