package agentbe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbe/agent-backend/internal/execline"
	"github.com/agentbe/agent-backend/internal/procs"
	"golang.org/x/crypto/ssh"
)

// Exec runs command on the daemon over an SSH exec channel, in RootDir (or
// opts.Dir), with HOME set to that directory and the merged environment
// (RemoteConfig.Env, the scope's, opts.Env). Output is binary-safe: stdout
// and stderr stream to opts.Stdout / opts.Stderr when set, else stdout is
// collected (capped by MaxOutputBytes). A non-zero exit, or death by a
// signal (ExitError.Signal), yields EXEC_FAILED with an *ExitError;
// cancelling ctx or opts.Timeout closes the channel, which makes the daemon
// kill the command's process group; losing the connection yields
// CONNECTION_CLOSED at once.
//
// The command is checked against the dangerous-command list here first
// (unless AllowDangerous), and again by the daemon.
//
// Working directory and environment travel in the command line, in the
// form the TypeScript client uses (HOME='<dir>' K='v' cd "<dir>" && cmd,
// internal/execline), which our daemon recognises and applies exactly; our
// daemon is also told the Remote's RootDir (AGENTBE_SCOPE, see
// remote_scope.go), so that a scope's command sees only the scope (under
// the daemon's bwrap isolation, nothing else is mounted). Other daemons (the
// TypeScript reference, a plain sshd) would give the variables to "cd"
// only, so for them the same assignments are exported again before the
// command. A directory whose name contains $ ` \ or " cannot be written in
// that form and is refused.
func (r *Remote) Exec(ctx context.Context, command string, opts ExecOptions) ([]byte, error) {
	start := time.Now()
	out, stderr, err := r.exec(ctx, command, opts)
	if lg := r.core.logFor(r.view); lg.logger != nil {
		lg.logExec(ctx, start, command, string(out), stderr, err)
	}
	return out, err
}

func (r *Remote) exec(ctx context.Context, command string, opts ExecOptions) ([]byte, string, error) {
	if err := r.core.alive("exec", ""); err != nil {
		return nil, "", err
	}
	if strings.TrimSpace(command) == "" {
		return nil, "", &Error{Code: CodeEmptyCommand, Op: "exec", Backend: KindRemote, Err: ErrEmptyCommand}
	}
	if !r.core.cfg.AllowDangerous {
		if err := r.core.checker.Check(command); err != nil {
			return nil, "", fillError(err, "", KindRemote)
		}
	}
	dir := r.rootDir
	if opts.Dir != "" {
		d, err := r.remotePath("exec", opts.Dir)
		if err != nil {
			return nil, "", err
		}
		dir = d
	}
	if !execline.ValidDir(dir) {
		return nil, "", &Error{Code: CodeExecError, Op: "exec", Path: opts.Dir, Command: command, Backend: KindRemote,
			Err: errors.New(`the working directory's name contains $ ` + "`" + ` \ or ", which cannot be sent safely`)}
	}
	env := mergeMaps(r.core.cfg.Env, opts.Env)
	err := validateEnv(env)
	if err == nil {
		err = validateRemoteEnv(env)
	}
	if err != nil {
		return nil, "", &Error{Code: CodeExecError, Op: "exec", Command: command, Backend: KindRemote, Err: err}
	}
	ctx, cancel := r.core.opCtx(ctx)
	defer cancel()
	if opts.Timeout > 0 {
		var c2 context.CancelFunc
		ctx, c2 = context.WithTimeout(ctx, opts.Timeout)
		defer c2()
	}
	l, err := r.core.ensure(ctx, "exec")
	if err != nil {
		return nil, "", err
	}
	s, err := l.ssh.NewSession()
	if err != nil {
		return nil, "", r.fail("exec", "", l, err)
	}
	defer s.Close()
	stdout := &procs.CapBuffer{Max: r.outputCap()}
	stderr := &procs.CapBuffer{Max: maxStderrKept}
	s.Stdin = opts.Stdin
	if opts.Stdout != nil {
		s.Stdout = opts.Stdout
	} else {
		s.Stdout = stdout
	}
	if opts.Stderr != nil {
		s.Stderr = multiWriter{opts.Stderr, stderr}
	} else {
		s.Stderr = stderr
	}
	if l.ours {
		// The scope (RootDir) is the command's boundary on the daemon;
		// dir is only its working directory.
		if err := sendScope(s, r.rootDir); err != nil {
			return nil, "", r.fail("exec", "", l, err)
		}
	}
	if err := s.Start(execline.Encode(dir, env, command, !l.ours)); err != nil {
		if l.ours {
			if _, down := probe(l, time.Second); !down {
				return nil, "", &Error{Code: CodeExecError, Op: "exec", Command: command, Backend: KindRemote,
					Err: fmt.Errorf("%w: %s: %w", errScopeRefused, r.rootDir, err)}
			}
		}
		return nil, "", r.fail("exec", "", l, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- s.Wait() }()
	var runErr error
	select {
	case runErr = <-waited:
	case <-ctx.Done():
		_ = s.Signal(ssh.SIGKILL)
		s.Close()
		<-waited
		return nil, stderr.String(), &Error{Code: CodeExecFailed, Op: "exec", Command: command,
			Backend: KindRemote, Err: ctx.Err()}
	}
	if runErr == nil {
		if opts.Stdout != nil {
			return nil, stderr.String(), nil
		}
		return stdout.Result(), stderr.String(), nil
	}
	var ee *ssh.ExitError
	if !errors.As(runErr, &ee) {
		// The session may end before the link's loss is recorded: ask
		// the link itself.
		if _, down := probe(l, time.Second); down {
			return nil, stderr.String(), connClosed("exec", "", runErr)
		}
		return nil, stderr.String(), &Error{Code: CodeExecError, Op: "exec", Command: command, Backend: KindRemote,
			Err: fmt.Errorf("command ended without an exit status: %w", runErr)}
	}
	xe := &ExitError{Command: command, ExitCode: ee.ExitStatus(), Signal: ee.Signal(),
		Stdout: stdout.Result(), Stderr: stderr.Bytes()}
	if xe.Signal != "" {
		xe.ExitCode = -1
	}
	return nil, stderr.String(), &Error{Code: CodeExecFailed, Op: "exec", Command: command, Backend: KindRemote, Err: xe}
}

func (r *Remote) outputCap() int {
	if n := r.core.cfg.MaxOutputBytes; n > 0 {
		return n
	}
	return DefaultMaxOutputBytes
}

// validateRemoteEnv refuses names the command-line form cannot carry
// (shell names only: letters, digits, '_', not starting with a digit).
func validateRemoteEnv(env map[string]string) error {
	for k := range env {
		if !execline.ValidName(k) {
			return fmt.Errorf("environment variable name %q is not a shell name", k)
		}
	}
	return nil
}
