package agentbe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

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

// newSandbox resolves the configured isolation mode; NewLocal calls it
// once per backend.
//
//   - IsolationNone and IsolationSoftware run the shell directly (the safety
//     check and the working-directory validation are Local.Exec's).
//   - IsolationBwrap requires a usable bwrap: installed, and a probe sandbox
//     actually runs (inside many containers bwrap exists but cannot create
//     namespaces). Otherwise it fails with MISSING_UTILITIES.
//   - IsolationAuto ("") uses bwrap when usable, else software, and logs the
//     choice and its reason once per process on the default slog logger.
//
// The probe runs once per process; its result is cached.
func newSandbox(m Isolation) (sandbox, error) {
	return selectSandbox(m, detectBwrap, logAutoChoiceOnce)
}

// selectSandbox is newSandbox with the probe and the logger as parameters.
func selectSandbox(m Isolation, probe func() (bwrapLayout, error), logChoice func(Isolation, string)) (sandbox, error) {
	switch m {
	case IsolationNone:
		return plainSandbox{IsolationNone}, nil
	case IsolationSoftware:
		return plainSandbox{IsolationSoftware}, nil
	case IsolationBwrap:
		l, err := probe()
		if err != nil {
			return nil, &Error{Code: CodeMissingUtilities, Op: "config",
				Reason: "isolation bwrap is not usable: " + err.Error(), Err: ErrMissingUtility}
		}
		return bwrapSandbox{l}, nil
	case "", IsolationAuto:
		l, err := probe()
		if err != nil {
			logChoice(IsolationSoftware, "bwrap is not usable: "+err.Error())
			return plainSandbox{IsolationSoftware}, nil
		}
		logChoice(IsolationBwrap, "bwrap at "+l.bwrap+" runs a probe sandbox")
		return bwrapSandbox{l}, nil
	}
	return nil, &Error{Code: CodeInvalidConfiguration, Op: "config",
		Reason: "unknown isolation mode " + string(m), Err: ErrInvalidConfig}
}

var autoLogOnce sync.Once

func logAutoChoiceOnce(chosen Isolation, reason string) {
	autoLogOnce.Do(func() {
		slog.Info("agentbe: isolation auto selected "+string(chosen), "isolation", string(chosen), "reason", reason)
	})
}

var bwrapProbe struct {
	once   sync.Once
	layout bwrapLayout
	err    error
}

// detectBwrap finds bwrap on PATH and checks, once per process, that it can
// build the sandbox commands will run in.
func detectBwrap() (bwrapLayout, error) {
	bwrapProbe.once.Do(func() {
		if runtime.GOOS != "linux" {
			bwrapProbe.err = errors.New("bwrap requires Linux")
			return
		}
		p, err := exec.LookPath("bwrap")
		if err != nil {
			bwrapProbe.err = errors.New("bwrap not found in PATH")
			return
		}
		bwrapProbe.layout, bwrapProbe.err = probeBwrap(p)
	})
	return bwrapProbe.layout, bwrapProbe.err
}

// probeTimeout bounds the probe sandbox.
const probeTimeout = 10 * time.Second

// probeBwrap runs "true" in a sandbox built exactly like a command's, on an
// empty temporary workspace, and reports why it failed.
func probeBwrap(bwrap string) (bwrapLayout, error) {
	l := hostBwrapLayout(bwrap)
	if st, err := newEtcStage("/"); err == nil {
		l.stage = st
	}
	dir, err := os.MkdirTemp("", "agentbe-bwrap-probe-")
	if err != nil {
		return l, fmt.Errorf("probe workspace: %w", err)
	}
	defer os.RemoveAll(dir)
	shell := "/bin/sh"
	if _, err := os.Stat(shell); err != nil {
		return l, errors.New("probe: no /bin/sh")
	}
	spec := sandboxSpec{Shell: shell, Command: "exit 0", HostRoot: dir, WorkRel: "."}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	argv := bwrapArgv(l.withEtc(), spec)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = bwrapEnv(spec), dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		if l.stage != nil {
			os.RemoveAll(l.stage.base)
			l.stage = nil
		}
		msg := strings.TrimSpace(string(out))
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if msg == "" {
			msg = err.Error()
		}
		return l, fmt.Errorf("probe sandbox failed: %s", msg)
	}
	return l, nil
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
