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

	"github.com/agentbe/agent-backend/internal/beneath"
	"github.com/agentbe/agent-backend/internal/wspath"
)

// Isolation selects how commands are sandboxed.
//
// What each mode guarantees, whoever the process runs as:
//
//   - IsolationBwrap: the command sees the workspace (or scope) directory at
//     /tmp/agentbe-workspace, read-only system directories, a private /tmp,
//     /dev and /proc, and a minimal /etc; nothing else of the host. The
//     directory is bound from the descriptor that was validated, so renaming
//     or swapping a parent entry for a link cannot redirect it. The launcher
//     (bwrap) gets a fixed empty environment and runs from "/": the
//     command's variables (LD_PRELOAD, LD_AUDIT, GCONV_PATH…) only apply
//     inside. No descriptor but stdio reaches the command, and its argv and
//     pid 1 show no host path (the host's layout is still visible in
//     /proc/self/mountinfo, which names the bound directories).
//   - Running as root (the usual container case): the command is the host's
//     uid 0 inside a user namespace, so besides the above it loses every
//     capability (--cap-drop ALL), sees /proc read-only, and a seccomp filter
//     refuses every chmod or create whose mode has the set-user-ID or
//     set-group-ID bit (and openat2 and io_uring, which would hide the mode),
//     so no file it leaves is set-user-ID root on the host. Files it creates
//     are owned by root.
//   - Running as another user: the command has that user's rights on the
//     workspace, no more; the same filter keeps it from leaving a
//     set-user-ID file of that user for others to run.
//   - IsolationSoftware: a heuristic, not a sandbox. The command runs as this
//     process's user with the dangerous-command check, its workspace-escape
//     class (no cd, pushd, popd, $HOME, ~/, "..", export PATH/HOME/PWD=) and
//     a path check (no absolute path outside the workspace; see
//     checkSoftwarePaths), which a determined command can defeat. Nothing
//     stops it from setting set-user-ID bits on its own files: do not run
//     software mode as root where other users can reach the workspace.
//   - IsolationNone: no confinement at all (trusted commands only). The
//     dangerous-command check and its workspace-escape class still apply
//     unless LocalConfig.AllowDangerous turns them off.
//
// Under bwrap the kernel keeps the command in the workspace, so only the
// dangerous class of the check applies there: cd, $HOME and ".." are
// harmless inside the sandbox ("cd src && make" works). See SafetyPolicy.
//
// In every mode the command's environment follows one rule (commandEnv) and
// file operations stay jailed to the workspace by *os.Root.
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
	Root     *os.Root          // the workspace (the scope root for scopes), as validated
	HostRoot string            // its host path, for messages and PWD only: never opened by name
	WorkRel  string            // working directory relative to Root ("." = Root), link-free
	Env      map[string]string // backend < scope < call environment, already merged
	Inherit  bool              // start from the host's environment (LocalConfig.InheritEnv)
}

// sandbox turns a sandboxSpec into the process to start.
type sandbox interface {
	// prepare opens what the process needs; the caller starts it and then
	// calls launch.release.
	prepare(s sandboxSpec) (*launch, error)
	// mode reports the effective isolation mode.
	mode() Isolation
}

// launch is a prepared process: argv (argv[0] an absolute path), its whole
// environment, its working directory, and the files it inherits as
// descriptors 3, 4, … (extra) or that must stay open until it has started
// (keep).
type launch struct {
	argv  []string
	env   []string
	dir   string
	extra []*os.File
	keep  []*os.File
	// init, under bwrap, kills the sandbox's init; the caller that takes
	// it (setting the field to nil) owns it, release closes it otherwise.
	init *sandboxInit
}

// release closes the parent's copies of the launch's files; call it once
// the process has started (or failed to).
func (l *launch) release() {
	for _, f := range l.extra {
		f.Close()
	}
	for _, f := range l.keep {
		f.Close()
	}
	l.init.close()
}

// cleanEnvPath is the PATH of every command unless an env sets one.
const cleanEnvPath = sandboxPath

// commandEnv is the one environment rule of every launcher (bwrap, software,
// none; the daemon's SSH sessions go through the same Exec). A command gets
// a clean base, never the calling process's variables (so no daemon secret,
// such as an auth token, reaches it):
//
//	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
//	LANG=C.UTF-8  TERM=dumb  SHELL=<the shell>  TMPDIR=<mode's temporary directory>
//
// then the backend's, the scope's and the call's Env (later ones winning),
// then HOME and PWD set to the working directory. With inherit
// (LocalConfig.InheritEnv) the base is the calling process's environment
// instead. SHELL is in the base because without it bash looks its user up
// at every start to set it (getpwuid: the nscd socket, nsswitch.conf,
// /etc/passwd), which was about 5% of Exec("true") paired with a raw spawn.
func commandEnv(inherit bool, shell string, base, env map[string]string, dir string) []string {
	b := map[string]string{"PATH": cleanEnvPath, "LANG": "C.UTF-8", "TERM": "dumb", "SHELL": shell}
	var host []string
	if inherit {
		b, host = nil, os.Environ()
	}
	return mergeEnv(host, b, base, env, map[string]string{"HOME": dir, "PWD": dir})
}

// plainSandbox runs the shell directly (isolation none and software) in the
// working directory, reached through the descriptor of the directory that
// was validated (see workDirPath), with the environment of commandEnv.
type plainSandbox struct{ m Isolation }

func (p plainSandbox) mode() Isolation { return p.m }

func (p plainSandbox) prepare(s sandboxSpec) (*launch, error) {
	hostDir := wspath.Join(s.HostRoot, s.WorkRel)
	wd, err := s.Root.OpenFile(s.WorkRel, os.O_RDONLY|beneath.NoWait|beneath.DirOnly, 0)
	if err != nil {
		return nil, err
	}
	env := commandEnv(s.Inherit, s.Shell, map[string]string{"TMPDIR": os.TempDir()}, s.Env, hostDir)
	return &launch{argv: []string{s.Shell, "-c", s.Command}, env: env,
		dir: workDirPath(wd, hostDir), keep: []*os.File{wd}}, nil
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
		return newBwrapSandbox(l), nil
	case "", IsolationAuto:
		l, err := probe()
		if err != nil {
			logChoice(IsolationSoftware, "bwrap is not usable: "+err.Error())
			return plainSandbox{IsolationSoftware}, nil
		}
		logChoice(IsolationBwrap, "bwrap at "+l.bwrap+" runs a probe sandbox")
		return newBwrapSandbox(l), nil
	}
	return nil, &Error{Code: CodeInvalidConfiguration, Op: "config",
		Reason: "unknown isolation mode " + string(m), Err: ErrInvalidConfig}
}

var autoLogOnce sync.Once

// softwareModeLimits says what software mode does and does not confine; it
// is logged when auto falls back to it.
const softwareModeLimits = "commands run unsandboxed as this process's user: the dangerous-command " +
	"check and the absolute-path and '..' heuristics apply, the file tools stay jailed, but a " +
	"command can still read or write anything this user can"

// logAutoChoiceOnce logs the mode auto chose, once per process, on the
// default slog logger (see logAutoChoice).
func logAutoChoiceOnce(chosen Isolation, reason string) {
	autoLogOnce.Do(func() { logAutoChoice(slog.Default(), chosen, reason) })
}

// logAutoChoice logs at Info when auto chose bwrap, and as a Warn that names
// what is and is not confined when it fell back to software.
func logAutoChoice(lg *slog.Logger, chosen Isolation, reason string) {
	if chosen == IsolationSoftware {
		lg.Warn("agentbe: isolation auto fell back to software; "+softwareModeLimits,
			"isolation", string(chosen), "reason", reason)
		return
	}
	lg.Info("agentbe: isolation auto selected "+string(chosen), "isolation", string(chosen), "reason", reason)
}

// newBwrapSandbox returns the bwrap sandbox for layout l; the probe has
// already built the seccomp filter, so it cannot fail here.
func newBwrapSandbox(l bwrapLayout) bwrapSandbox {
	filter, _ := seccompFilter()
	return bwrapSandbox{layout: l, seccomp: filter}
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

// probeBwrap runs "exit 0" in a sandbox built exactly like a command's
// (seccomp filter, workspace bound by descriptor), on an empty temporary
// workspace, and reports why it failed. A bwrap without --bind-fd (before
// 0.8.0) is probed again in the layout that binds /proc/self/fd/N instead
// (see bwrapArgv).
func probeBwrap(bwrap string) (bwrapLayout, error) {
	host := hostBwrapLayout(bwrap)
	l, err := probeBwrapLayout(host)
	if err != nil && strings.Contains(err.Error(), "--bind-fd") {
		host.noBindFD = true
		return probeBwrapLayout(host)
	}
	return l, err
}

// probeBwrapLayout is probeBwrap for one layout.
func probeBwrapLayout(l bwrapLayout) (bwrapLayout, error) {
	if _, err := seccompFilter(); err != nil {
		return l, err
	}
	if st, err := newEtcStage("/"); err == nil {
		l.stage = st
	}
	dropStage := func() {
		if l.stage != nil {
			os.RemoveAll(l.stage.base)
			l.stage = nil
		}
	}
	dir, err := os.MkdirTemp("", "agentbe-bwrap-probe-")
	if err != nil {
		dropStage()
		return l, fmt.Errorf("probe workspace: %w", err)
	}
	defer os.RemoveAll(dir)
	root, err := os.OpenRoot(dir)
	if err != nil {
		dropStage()
		return l, fmt.Errorf("probe workspace: %w", err)
	}
	defer root.Close()
	shell := "/bin/sh"
	if _, err := os.Stat(shell); err != nil {
		dropStage()
		return l, errors.New("probe: no /bin/sh")
	}
	spec := sandboxSpec{Shell: shell, Command: "exit 0", Root: root, HostRoot: dir, WorkRel: "."}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	la, err := newBwrapSandbox(l).prepare(spec)
	if err != nil {
		dropStage()
		return l, fmt.Errorf("probe: %w", err)
	}
	cmd := exec.CommandContext(ctx, la.argv[0], la.argv[1:]...)
	cmd.Env, cmd.Dir, cmd.ExtraFiles = la.env, la.dir, la.extra
	out, err := cmd.CombinedOutput()
	la.release()
	if err != nil {
		dropStage()
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
