package agentbe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/agentbe/agent-backend/internal/procs"
	"github.com/agentbe/agent-backend/internal/sandbox"
	"github.com/agentbe/agent-backend/internal/wspath"
)

// resolveShell picks the shell once per backend (sandbox.ResolveShell),
// with the backend's errors.
func resolveShell(s Shell) (string, error) {
	p, err := sandbox.ResolveShell(string(s))
	var none *sandbox.NoShellError
	switch {
	case errors.Is(err, sandbox.ErrUnknownShell):
		return "", configErr("unknown shell "+string(s), nil)
	case errors.As(err, &none):
		return "", &Error{Code: CodeMissingUtilities, Op: "config", Reason: none.Error(), Err: ErrMissingUtility}
	}
	return p, err
}

// Exec runs command with the backend's shell in the workspace root (or
// opts.Dir) and returns its standard output. See ExecOptions.
//
// The command is first checked like CheckCommand does (with the policy
// compiled once, at construction) unless AllowDangerous is set: the
// dangerous class in every mode, the workspace-escape class (cd, $HOME,
// "..") only in the modes that do not confine commands (software, none;
// see SafetyPolicy). In software mode it must also pass the absolute-path
// heuristic (see IsolationSoftware).
//
// The environment follows one rule in every mode: a clean base, never this
// process's variables (PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin,
// LANG=C.UTF-8, TERM=dumb, SHELL the backend's shell, TMPDIR the mode's
// temporary directory), or this process's environment with
// LocalConfig.InheritEnv; then LocalConfig.Env, the scope's and the call's
// Env; HOME and PWD are the working directory. The working directory is
// reached through the descriptor of the directory that was validated,
// never by name again.
//
// Cancelling ctx, reaching opts.Timeout or destroying the backend kills the
// command's whole process group (under bwrap, the whole sandbox; in the
// other modes a descendant that left the group with setsid survives).
// Collected stdout is capped (LocalConfig.MaxOutputBytes). A non-zero exit
// yields an *Error of code EXEC_FAILED wrapping an *ExitError; a command that
// could not be started (bad Dir or Env included) yields EXEC_ERROR, a Dir
// outside the workspace PATH_ESCAPE_ATTEMPT, and a backend destroyed while
// the command ran DESTROYED.
func (l *Local) Exec(ctx context.Context, command string, opts ExecOptions) ([]byte, error) {
	start := time.Now()
	out, stderr, err := l.exec(ctx, command, opts)
	if l.log.logger != nil {
		l.log.logExec(ctx, start, command, string(out), stderr, err)
	}
	return out, err
}

func (l *Local) exec(ctx context.Context, command string, opts ExecOptions) ([]byte, string, error) {
	if err := l.alive("exec", ""); err != nil {
		return nil, "", err
	}
	if strings.TrimSpace(command) == "" {
		return nil, "", &Error{Code: CodeEmptyCommand, Op: "exec", Backend: KindLocal, Err: ErrEmptyCommand}
	}
	if !l.cfg.AllowDangerous {
		if err := l.checker.Check(command); err != nil {
			return nil, "", fillError(err, "", KindLocal)
		}
	}
	root, host, err := l.jail.get()
	if err != nil {
		return nil, "", l.fail("exec", ".", err)
	}
	if l.sb.Mode() == sandbox.Software && !l.cfg.AllowDangerous {
		if err := sandbox.CheckSoftwarePaths(command, host, l.rootDir); err != nil {
			return nil, "", &Error{Code: CodeDangerousOperation, Op: "exec", Command: command,
				Backend: KindLocal, Err: err}
		}
	}
	workRel, err := l.workDir(root, host, opts.Dir)
	if err != nil {
		return nil, "", err
	}
	env := mergeMaps(l.cfg.Env, opts.Env)
	if err := validateEnv(env); err != nil {
		return nil, "", &Error{Code: CodeExecError, Op: "exec", Command: command, Backend: KindLocal, Err: err}
	}
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	lim, g := l.limits, l.group
	if g != nil && g.isClosed() {
		return nil, "", &Error{Code: CodeExecError, Op: "exec", Command: command, Backend: KindLocal,
			Err: errors.New("cannot start command: its resource group is closed")}
	}
	if timeout := lim.timeoutWith(g); timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errTimeLimit)
		defer cancel()
	}
	cg, err := l.commandCgroup(lim, g)
	if err != nil {
		return nil, "", &Error{Code: CodeExecError, Op: "exec", Command: command, Backend: KindLocal,
			Err: errors.New("cannot confine command: " + scrubCgroup(err))}
	}
	if cg != nil {
		defer func() {
			if l.cgroupDone != nil {
				l.cgroupDone(cg)
			}
			cg.Close()
		}()
	}
	sc, err := l.sb.Command(ctx, sandbox.Spec{Shell: l.shell, Command: command, Root: root,
		HostRoot: host, WorkRel: workRel, Env: env, Inherit: l.cfg.InheritEnv,
		NoNetwork: l.network == NetworkNone, Cgroup: cg})
	if err != nil {
		return nil, "", l.fail("exec", opts.Dir, err)
	}
	defer sc.Done()
	cmd := sc.Cmd
	cmd.Stdin = procs.Stdin(opts.Stdin)
	// Grandchildren may hold the output pipes open after a kill.
	cmd.WaitDelay = 2 * time.Second

	stdout := &procs.CapBuffer{Max: l.outputCap()}
	stderr := &procs.CapBuffer{Max: maxStderrKept}
	var pipes *procs.OutputPipes
	if opts.Stdout == nil && opts.Stderr == nil {
		if pipes, err = procs.NewOutputPipes(cmd); err != nil {
			return nil, "", &Error{Code: CodeExecError, Op: "exec", Command: command, Backend: KindLocal,
				Err: errors.New("cannot start command: " + err.Error())}
		}
	}
	if pipes == nil {
		// Streaming writers (or no pidfds): os/exec copies in goroutines.
		cmd.Stdout = stdout
		if opts.Stdout != nil {
			cmd.Stdout = opts.Stdout
		}
		cmd.Stderr = stderr
		if opts.Stderr != nil {
			cmd.Stderr = multiWriter{opts.Stderr, stderr}
		}
	}
	startErr := procs.Start(cmd)
	// Under cgroup v1 this places the command in its cgroup and lets it go.
	placeErr := sc.Started()
	if pipes != nil {
		pipes.Started(startErr)
	}
	if startErr != nil {
		if ctx.Err() != nil {
			// Cancelled (or timed out) while starting: the same answer as
			// a cancel a moment later, so callers can tell it by errors.Is.
			return nil, "", &Error{Code: CodeExecFailed, Op: "exec", Command: command,
				Backend: KindLocal, Err: ctx.Err()}
		}
		return nil, "", &Error{Code: CodeExecError, Op: "exec", Command: command, Backend: KindLocal,
			Err: errors.New("cannot start command: " + scrubHost(startErr.Error(), host))}
	}
	untrack := l.life.track(sc)
	mon := watchLimits(cg)
	var runErr error
	if pipes != nil {
		runErr = pipes.Wait(cmd, stdout, stderr, cmd.WaitDelay)
	} else {
		runErr = cmd.Wait()
	}
	untrack()
	stopped := mon.stop()
	if runErr == nil && stopped == "" && placeErr == nil {
		if opts.Stdout != nil {
			return nil, stderr.String(), nil
		}
		return stdout.Result(), stderr.String(), nil
	}
	if l.life.dead() {
		return nil, stderr.String(), &Error{Code: CodeDestroyed, Op: "exec", Command: command,
			Backend: KindLocal, Err: ErrDestroyed}
	}
	if placeErr != nil {
		return nil, stderr.String(), &Error{Code: CodeExecError, Op: "exec", Command: command, Backend: KindLocal,
			Err: errors.New("cannot confine command: " + scrubCgroup(placeErr))}
	}
	if stopped != "" {
		return nil, stderr.String(), limitError(command, stopped, lim, g, cg)
	}
	if context.Cause(ctx) == errTimeLimit {
		return nil, stderr.String(), limitError(command, LimitTime, lim, g, cg)
	}
	if ctx.Err() != nil {
		return nil, stderr.String(), &Error{Code: CodeExecFailed, Op: "exec", Command: command,
			Backend: KindLocal, Err: ctx.Err()}
	}
	if hit := hitOf(cg); hit != "" {
		return nil, stderr.String(), limitError(command, hit, lim, g, cg)
	}
	var ee *exec.ExitError
	if !errors.As(runErr, &ee) {
		return nil, "", &Error{Code: CodeExecError, Op: "exec", Command: command, Backend: KindLocal,
			Err: errors.New("command failed: " + scrubHost(runErr.Error(), host))}
	}
	xe := &ExitError{Command: command, ExitCode: ee.ExitCode(), Stdout: stdout.Result(), Stderr: stderr.Bytes()}
	return nil, stderr.String(), &Error{Code: CodeExecFailed, Op: "exec", Command: command,
		Backend: KindLocal, Err: xe}
}

// DefaultMaxOutputBytes is the cap on collected stdout when
// LocalConfig.MaxOutputBytes is zero: 10 MiB. The MCP exec tool passes on
// less (MCPServerOptions.MaxExecOutputBytes, 1 MiB by default), so that its
// result fits what MCP clients accept in one message.
const DefaultMaxOutputBytes = 10 << 20

// outputCap is the effective cap on collected stdout.
func (l *Local) outputCap() int {
	if l.cfg.MaxOutputBytes > 0 {
		return l.cfg.MaxOutputBytes
	}
	return DefaultMaxOutputBytes
}

// fillError returns err with Path and Backend filled in where its *Error
// leaves them empty (the safety checker knows neither; an error found
// before a path was known has no Path).
func fillError(err error, p string, k Kind) error {
	var e *Error
	if !errors.As(err, &e) || (e.Path != "" || p == "") && (e.Backend != "" || k == "") {
		return err
	}
	c := *e
	if c.Path == "" {
		c.Path = p
	}
	if c.Backend == "" {
		c.Backend = k
	}
	return &c
}

// validateEnv refuses variable names that no environment can hold (empty,
// or with '=' or NUL) and values with NUL, instead of letting them be
// misread as another variable.
func validateEnv(env map[string]string) error {
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("invalid environment variable name %q", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("environment variable %s: value contains NUL", k)
		}
	}
	return nil
}

// workDir validates opts.Dir: it must resolve (links followed inside the
// jail) to an existing directory. The result is link-free at the time of
// the check; the launcher then opens it through the jail, never by host
// name.
func (l *Local) workDir(root *os.Root, host, dir string) (string, error) {
	if dir == "" {
		return ".", nil
	}
	rel, err := wspath.Resolve(l.rootDir, dir)
	if err != nil {
		return "", l.fail("exec", dir, err)
	}
	real, err := wspath.RealPath(root, host, rel)
	if err != nil {
		return "", l.fail("exec", dir, err)
	}
	fi, err := root.Stat(real)
	if err != nil {
		return "", l.fail("exec", dir, err)
	}
	if !fi.IsDir() {
		return "", l.fail("exec", dir, fmt.Errorf("working directory %q is not a directory", dir))
	}
	return real, nil
}

// scrubHost removes the workspace's host path from a message.
func scrubHost(msg, host string) string {
	if host == "" || host == "/" {
		return msg
	}
	return strings.ReplaceAll(msg, host, "<workspace>")
}

func mergeMaps(maps ...map[string]string) map[string]string {
	n := 0
	for _, m := range maps {
		n += len(m)
	}
	if n == 0 {
		return nil
	}
	out := make(map[string]string, n)
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// maxStderrKept bounds the stderr kept for an *ExitError.
const maxStderrKept = 1 << 20

// multiWriter writes to both writers; the first one's error wins.
type multiWriter [2]interface{ Write([]byte) (int, error) }

func (m multiWriter) Write(p []byte) (int, error) {
	n, err := m[0].Write(p)
	_, _ = m[1].Write(p)
	return n, err
}
