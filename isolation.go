package agentbe

import (
	"os"
	"sort"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// Isolation selects how commands are sandboxed.
type Isolation string

// Isolation modes. The zero value ("") means IsolationAuto.
const (
	// IsolationAuto uses bwrap when it is installed and works, else software.
	IsolationAuto Isolation = "auto"
	// IsolationBwrap runs every command in a bubblewrap sandbox.
	IsolationBwrap Isolation = "bwrap"
	// IsolationSoftware validates commands and working directories only.
	IsolationSoftware Isolation = "software"
	// IsolationNone runs commands directly (trust mode).
	IsolationNone Isolation = "none"
)

// sandboxSpec describes one command for the isolation layer to start.
type sandboxSpec struct {
	Shell    string            // absolute path of the resolved shell
	Command  string            // the command line, run with Shell -c
	HostRoot string            // host directory that is the workspace (the scope root for scopes)
	WorkRel  string            // working directory relative to HostRoot ("." = HostRoot)
	Env      map[string]string // backend < scope < call environment, already merged
}

// sandbox turns a sandboxSpec into the process to start.
type sandbox interface {
	// command returns argv (argv[0] an absolute path), the full environment
	// and the host working directory for the process.
	command(s sandboxSpec) (argv, env []string, dir string)
	// mode reports the effective isolation mode.
	mode() Isolation
}

// plainSandbox runs the shell directly (isolation none and software): the
// process environment, overridden by the merged env, with HOME and PWD set
// to the working directory.
type plainSandbox struct{ m Isolation }

func (p plainSandbox) mode() Isolation { return p.m }

func (p plainSandbox) command(s sandboxSpec) ([]string, []string, string) {
	dir := wspath.Join(s.HostRoot, s.WorkRel)
	env := mergeEnv(os.Environ(), s.Env, map[string]string{"HOME": dir, "PWD": dir})
	return []string{s.Shell, "-c", s.Command}, env, dir
}

// newSandbox resolves the configured isolation mode.
// The bwrap mode is added by the isolation work (issue 3).
func newSandbox(m Isolation) (sandbox, error) {
	switch m {
	case IsolationNone:
		return plainSandbox{IsolationNone}, nil
	default:
		return plainSandbox{IsolationSoftware}, nil
	}
}

// mergeEnv overlays each map onto base (KEY=VALUE entries), later maps
// winning, and returns a sorted, de-duplicated environment.
func mergeEnv(base []string, overlays ...map[string]string) []string {
	m := make(map[string]string, len(base)+8)
	for _, kv := range base {
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				m[kv[:i]] = kv[i+1:]
				break
			}
		}
	}
	for _, o := range overlays {
		for k, v := range o {
			m[k] = v
		}
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
