package agentbe

import (
	"log/slog"
	"sync"

	"github.com/agentbe/agent-backend/internal/sandbox"
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
//     docs/safety.md), which a determined command can defeat. Nothing
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
// In every mode the command's environment follows one rule (see Exec) and
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
// The probe runs once per process (sandbox.NewBwrap); its result is cached.
func newSandbox(m Isolation) (sandbox.Sandbox, error) {
	return selectSandbox(m, sandbox.NewBwrap, logAutoChoiceOnce)
}

// selectSandbox is newSandbox with the probe and the logger as parameters.
func selectSandbox(m Isolation, probe func() (sandbox.Sandbox, error), logChoice func(Isolation, string)) (sandbox.Sandbox, error) {
	switch m {
	case IsolationNone:
		return sandbox.Plain(sandbox.None), nil
	case IsolationSoftware:
		return sandbox.Plain(sandbox.Software), nil
	case IsolationBwrap:
		sb, err := probe()
		if err != nil {
			return nil, &Error{Code: CodeMissingUtilities, Op: "config",
				Reason: "isolation bwrap is not usable: " + err.Error(), Err: ErrMissingUtility}
		}
		return sb, nil
	case "", IsolationAuto:
		sb, err := probe()
		if err != nil {
			logChoice(IsolationSoftware, "bwrap is not usable: "+err.Error())
			return sandbox.Plain(sandbox.Software), nil
		}
		logChoice(IsolationBwrap, "bwrap at "+sb.Launcher()+" runs a probe sandbox")
		return sb, nil
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
