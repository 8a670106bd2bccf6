package agentbe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/agentbe/agent-backend/internal/procs"
	"github.com/agentbe/agent-backend/internal/wspath"
)

// resolveShell picks the shell once per backend, as daemon.md says: bash is
// /bin/bash, sh is /bin/sh, auto prefers /bin/bash and falls back to /bin/sh.
func resolveShell(s Shell) (string, error) {
	var candidates []string
	switch s {
	case "", ShellAuto:
		candidates = []string{"/bin/bash", "/bin/sh"}
	case ShellBash:
		candidates = []string{"/bin/bash"}
	case ShellSh:
		candidates = []string{"/bin/sh"}
	default:
		return "", configErr("unknown shell "+string(s), nil)
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	return "", &Error{Code: CodeMissingUtilities, Op: "config",
		Reason: "no usable shell (" + strings.Join(candidates, ", ") + ")", Err: ErrMissingUtility}
}

// Exec runs command with the backend's shell in the workspace root (or
// opts.Dir) and returns its standard output. See ExecOptions.
//
// The command is first checked like CheckCommand does (with the policy
// compiled once, at construction) unless AllowDangerous is set: the
// dangerous class in every mode, the workspace-escape class (cd, $HOME,
// "..") only in the modes that do not confine commands (software, none;
// see SafetyPolicy). In software mode it must also pass checkSoftwarePaths. The environment follows one
// rule in every mode (commandEnv): a clean base, never this process's
// variables unless LocalConfig.InheritEnv, then LocalConfig.Env, the
// scope's and the call's Env; HOME and PWD are the working directory. The working directory is reached through the
// descriptor of the directory that was validated, never by name again.
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
		l.log.logExec(start, command, string(out), stderr, err)
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
	if l.sb.mode() == IsolationSoftware && !l.cfg.AllowDangerous {
		if err := checkSoftwarePaths(command, host, l.rootDir); err != nil {
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
	la, err := l.sb.prepare(sandboxSpec{Shell: l.shell, Command: command, Root: root,
		HostRoot: host, WorkRel: workRel, Env: env, Inherit: l.cfg.InheritEnv})
	if err != nil {
		return nil, "", l.fail("exec", opts.Dir, err)
	}

	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, la.argv[0], la.argv[1:]...)
	cmd.Env, cmd.Dir, cmd.Stdin, cmd.ExtraFiles = la.env, la.dir, commandStdin(opts.Stdin), la.extra
	startOwnGroup(cmd)
	killer := groupKiller{cmd: cmd, init: la.init}
	la.init = nil
	defer killer.init.close()
	cmd.Cancel = killer.kill
	// Grandchildren may hold the output pipes open after a kill.
	cmd.WaitDelay = 2 * time.Second

	stdout := &capBuffer{max: l.outputCap()}
	stderr := &capBuffer{max: maxStderrKept}
	var pipes *outputPipes
	if opts.Stdout == nil && opts.Stderr == nil {
		if pipes, err = newOutputPipes(cmd); err != nil {
			la.release()
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
	la.release()
	if pipes != nil {
		pipes.started(startErr)
	}
	if startErr != nil {
		return nil, "", &Error{Code: CodeExecError, Op: "exec", Command: command, Backend: KindLocal,
			Err: errors.New("cannot start command: " + scrubHost(startErr.Error(), host))}
	}
	untrack := l.life.track(killer)
	var runErr error
	if pipes != nil {
		runErr = pipes.wait(cmd, stdout, stderr, cmd.WaitDelay)
	} else {
		runErr = cmd.Wait()
	}
	untrack()
	if runErr == nil {
		if opts.Stdout != nil {
			return nil, stderr.String(), nil
		}
		return stdout.result(), stderr.String(), nil
	}
	if l.life.dead() {
		return nil, stderr.String(), &Error{Code: CodeDestroyed, Op: "exec", Command: command,
			Backend: KindLocal, Err: ErrDestroyed}
	}
	if ctx.Err() != nil {
		return nil, stderr.String(), &Error{Code: CodeExecFailed, Op: "exec", Command: command,
			Backend: KindLocal, Err: ctx.Err()}
	}
	var ee *exec.ExitError
	if !errors.As(runErr, &ee) {
		return nil, "", &Error{Code: CodeExecError, Op: "exec", Command: command, Backend: KindLocal,
			Err: errors.New("command failed: " + scrubHost(runErr.Error(), host))}
	}
	xe := &ExitError{Command: command, ExitCode: ee.ExitCode(), Stdout: stdout.result(), Stderr: stderr.Bytes()}
	return nil, stderr.String(), &Error{Code: CodeExecFailed, Op: "exec", Command: command,
		Backend: KindLocal, Err: xe}
}

// groupKiller kills a running command: its process group and, under
// bwrap, the sandbox's init, which has left that group (see sandboxInit).
// It is the command's Cancel, and what Destroy closes.
type groupKiller struct {
	cmd  *exec.Cmd
	init *sandboxInit // nil outside bwrap
}

func (g groupKiller) kill() error {
	g.init.kill(g.cmd.Process.Pid)
	return killGroup(g.cmd)
}

func (g groupKiller) Close() error {
	_ = g.kill()
	return nil
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

// capBuffer collects output up to max bytes (0: unlimited) and counts the
// rest, so a chatty command cannot exhaust memory. It deliberately has no
// ReadFrom, so io.Copy goes through Write and the cap.
type capBuffer struct {
	buf   bytes.Buffer
	max   int
	total int64
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if c.max > 0 {
		room := c.max - c.buf.Len()
		if room <= 0 {
			return len(p), nil
		}
		if len(p) > room {
			c.buf.Write(p[:room])
			return len(p), nil
		}
	}
	return c.buf.Write(p)
}

func (c *capBuffer) Bytes() []byte  { return c.buf.Bytes() }
func (c *capBuffer) String() string { return c.buf.String() }

// result returns the collected output, with a note when it was truncated.
func (c *capBuffer) result() []byte {
	if c.max > 0 && c.total > int64(c.buf.Len()) {
		fmt.Fprintf(&c.buf, truncatedFormat, c.total, c.max)
	}
	return c.buf.Bytes()
}

// truncatedFormat is the note result appends to truncated output.
const truncatedFormat = "\n\n... [Output truncated. Full output was %d bytes, showing first %d]"

// splitTruncated takes result's note off out: it returns the output kept
// and the full length the note gives, or out and 0 when out does not end
// with a note that matches what it holds.
func splitTruncated(out []byte) ([]byte, int64) {
	const lead = "\n\n... [Output truncated. Full output was "
	i := bytes.LastIndex(out, []byte(lead))
	if i < 0 || out[len(out)-1] != ']' {
		return out, 0
	}
	var total int64
	var shown int
	if n, err := fmt.Sscanf(string(out[i:]), truncatedFormat, &total, &shown); err != nil || n != 2 ||
		shown != i || total <= int64(shown) || fmt.Sprintf(truncatedFormat, total, shown) != string(out[i:]) {
		return out, 0
	}
	return out[:i], total
}

// multiWriter writes to both writers; the first one's error wins.
type multiWriter [2]interface{ Write([]byte) (int, error) }

func (m multiWriter) Write(p []byte) (int, error) {
	n, err := m[0].Write(p)
	_, _ = m[1].Write(p)
	return n, err
}
