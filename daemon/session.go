package daemon

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/execline"
	ptydev "github.com/agentbe/agent-backend/internal/pty"
	"github.com/agentbe/agent-backend/internal/sandbox"
	"golang.org/x/crypto/ssh"
)

// Bounds on what one session may store.
const (
	maxSessionEnv  = 256
	maxEnvValueLen = 64 << 10
	defaultTerm    = "xterm-256color"
	// maxTermLen bounds pty-req's TERM (terminfo names are a few dozen
	// bytes at most); it must also be printable ASCII without spaces.
	maxTermLen = 64
	// maxWinDim bounds a pty's columns and rows (pty-req, window-change):
	// far beyond any screen, well within the kernel's 16 bits.
	maxWinDim = 10000
)

// validTerm reports whether t is a TERM value pty-req accepts.
func validTerm(t string) bool {
	if len(t) > maxTermLen {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] > '~' {
			return false
		}
	}
	return true
}

// session is one SSH "session" channel: pty-req and env requests are kept
// for the exec, shell or subsystem request that starts the work; after that
// window-change resizes the pty and signal ends the process.
type session struct {
	s   *Server
	ch  ssh.Channel
	ctx context.Context
	// p is who the channel works as: its tenant and the connection's scope.
	p principal

	// scope is the channel's own scope (AGENTBE_SCOPE, inside p's) when
	// scoped is set; scopeRefused records a refused one, which refuses the
	// work too.
	scope        string
	scoped       bool
	scopeRefused bool

	env      map[string]string
	pty      *ptyRequest
	started  bool
	startReq *ssh.Request // the exec/shell/subsystem request, answered early

	mu       sync.Mutex
	master   *os.File  // the pty master while a pty process runs
	size     [2]uint32 // latest window size (cols, rows) once started
	cancel   context.CancelFunc
	signaled string // signal name of a cancellation asked by the client
}

// ptyRequest is what pty-req asked for.
type ptyRequest struct {
	Term       string
	Cols, Rows uint32
}

// serveSession handles one session channel until the client closes it or
// its work is done (the exit status sent and the channel closed).
func (s *Server) serveSession(ctx context.Context, ch ssh.Channel, reqs <-chan *ssh.Request, p principal) {
	ctx, cancel := context.WithCancel(ctx)
	ss := &session{s: s, ch: ch, ctx: ctx, p: p, cancel: cancel, env: map[string]string{}}
	var work sync.WaitGroup
	// When the client closed the channel (or the connection died), or
	// handling a request panicked, whatever runs is killed.
	defer func() {
		if v := recover(); v != nil {
			s.panics.recoveredContext(ctx, "SSH session", v)
			go ssh.DiscardRequests(reqs)
		}
		cancel()
		work.Wait()
		ch.Close()
	}()
	for req := range reqs {
		ok := ss.handle(req, &work)
		if req.WantReply && !ss.replied(req) {
			req.Reply(ok, nil)
		}
	}
}

// hook calls the server's test hook, if any.
func (s *Server) hook(point string) {
	if h := s.testHook.Load(); h != nil {
		(*h)(point)
	}
}

func (ss *session) handle(req *ssh.Request, work *sync.WaitGroup) bool {
	ss.s.hook("request " + req.Type)
	switch req.Type {
	case "pty-req":
		var p struct {
			Term          string
			Cols, Rows    uint32
			Width, Height uint32
			Modes         string
		}
		if ss.started || ssh.Unmarshal(req.Payload, &p) != nil || !validTerm(p.Term) ||
			p.Cols > maxWinDim || p.Rows > maxWinDim {
			return false
		}
		if p.Term == "" {
			p.Term = defaultTerm
		}
		if p.Cols == 0 {
			p.Cols = 80
		}
		if p.Rows == 0 {
			p.Rows = 24
		}
		ss.pty = &ptyRequest{Term: p.Term, Cols: p.Cols, Rows: p.Rows}
		return true
	case "env":
		var e struct{ Name, Value string }
		if ss.started || ssh.Unmarshal(req.Payload, &e) != nil {
			return false
		}
		if e.Name == scopeEnv {
			return ss.narrow(e.Value)
		}
		if !execline.ValidName(e.Name) || len(e.Value) > maxEnvValueLen || len(ss.env) >= maxSessionEnv {
			return false
		}
		ss.env[e.Name] = e.Value
		return true
	case "window-change":
		var w struct{ Cols, Rows, Width, Height uint32 }
		if ssh.Unmarshal(req.Payload, &w) != nil || w.Cols > maxWinDim || w.Rows > maxWinDim {
			return false
		}
		if !ss.started && ss.pty != nil {
			ss.pty.Cols, ss.pty.Rows = w.Cols, w.Rows
			return true
		}
		ss.mu.Lock()
		ss.size = [2]uint32{w.Cols, w.Rows}
		if ss.master != nil {
			ptydev.SetSize(ss.master, int(w.Cols), int(w.Rows))
		}
		ss.mu.Unlock()
		return true
	case "signal":
		var sig struct{ Name string }
		if ssh.Unmarshal(req.Payload, &sig) != nil {
			return false
		}
		// Only a kill of the whole process group is available through the
		// backend: every signal ends the command.
		ss.mu.Lock()
		if ss.signaled == "" {
			ss.signaled = sig.Name
		}
		ss.mu.Unlock()
		ss.cancel()
		return true
	case "exec", "shell", "subsystem":
		if ss.started || ss.scopeRefused {
			return false
		}
		var arg struct{ Value string }
		if req.Type != "shell" && ssh.Unmarshal(req.Payload, &arg) != nil {
			return false
		}
		if req.Type == "subsystem" && arg.Value != "sftp" {
			return false
		}
		ss.started = true
		var pty *ptyRequest
		if ss.pty != nil {
			p := *ss.pty
			pty = &p
			ss.mu.Lock()
			ss.size = [2]uint32{p.Cols, p.Rows}
			ss.mu.Unlock()
		}
		// Acknowledge before the work starts: a command that ends at once
		// (refused, or just fast) closes the channel, and a reply sent
		// after that would never reach the client, which then sees EOF
		// instead of the exit status.
		if req.WantReply {
			req.Reply(true, nil)
			ss.startReq = req
		}
		work.Add(1)
		go func() {
			defer work.Done()
			defer func() {
				if v := recover(); v != nil {
					ss.s.panics.recoveredContext(ss.ctx, "SSH session work", v)
					ss.fail(errors.New("agentbe daemon: internal error"))
				}
			}()
			ss.run(req.Type, arg.Value, pty)
		}()
		return true
	}
	return false
}

// replied reports whether handle already answered req (the request that
// started the work).
func (ss *session) replied(req *ssh.Request) bool { return req == ss.startReq }

// narrow handles the env request AGENTBE_SCOPE: the channel's work is
// confined to that scope, which must lie inside the connection's. A scope
// refused (invalid, or outside) refuses the request and the work that
// follows.
func (ss *session) narrow(value string) bool {
	scope, err := ss.s.channelScope(value)
	if err != nil || !scopeContains(ss.p.scope, scope) {
		ss.scopeRefused = true
		return false
	}
	ss.scope, ss.scoped = scope, true
	return true
}

// run performs the session's work and reports how it ended: exit-status
// (or exit-signal) is always sent before the channel is closed.
//
// The work runs on the backend of the channel's scope (AGENTBE_SCOPE, else
// the connection's), so that commands see only the scope and SFTP is
// jailed at it. A command in the TypeScript client's form names its
// directory, which must lie inside that scope: on a channel with
// AGENTBE_SCOPE it is only the working directory; without, it is the
// command's scope as well (the client has no other way to say its scope).
func (ss *session) run(kind, arg string, pty *ptyRequest) {
	ss.s.hook("run " + kind)
	scope := ss.p.scope
	if ss.scoped {
		scope = ss.scope
	}
	cmd, dir, env := arg, "", map[string]string(nil)
	tc, prefixed := execline.Parse(arg)
	if kind == "exec" && prefixed {
		cmd, env = tc.Command, tc.Env
		d, err := ss.s.dirScope(tc.Dir)
		if err != nil || !scopeContains(scope, d) {
			ss.fail(errOutsideScope)
			return
		}
		if ss.scoped {
			dir = scopeRel(scope, d)
		} else if err := ss.s.existingDir(ss.ctx, d); err != nil {
			// A scope is made when missing; this directory is not a
			// scope the client asked for, and cd would fail.
			ss.fail(errors.New("agentbe daemon: cd: " + tc.Dir + ": no such directory"))
			return
		} else {
			scope = d
		}
	}
	b, release, err := ss.s.scopeBackend(ss.ctx, ss.p, scope)
	if err != nil {
		ss.fail(err)
		return
	}
	defer release()
	switch kind {
	case "subsystem":
		err := ss.s.serveSFTP(ss.ctx, ss.ch, b)
		code := 0
		if err != nil {
			code = 1
		}
		ss.finish(code, "")
	case "shell":
		ss.exitWith(ss.runCommand(b, pty, ss.s.shellCommand(pty != nil), "", nil))
	case "exec":
		if op, ok := parseTSFileOp(cmd); ok && prefixed {
			ss.exitWith(op.run(ss.ctx, b))
			return
		}
		ss.exitWith(ss.runCommand(b, pty, cmd, dir, env))
	}
}

// runCommand runs command through the workspace backend (so isolation and
// the dangerous-command check apply), on a pty when one was requested.
func (ss *session) runCommand(b agentbe.Backend, pty *ptyRequest, command, dir string, extra map[string]string) error {
	env := make(map[string]string, len(ss.env)+len(extra)+1)
	for k, v := range ss.env {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	env["TERM"] = defaultTerm
	if pty != nil {
		env["TERM"] = pty.Term
	}
	if pty != nil && ptySupported {
		return ss.runOnPTY(b, pty, command, dir, env)
	}
	stdin, stop, err := channelStdin(ss.ch)
	if err != nil {
		return err
	}
	defer stop()
	_, err = b.Exec(ss.ctx, command, agentbe.ExecOptions{
		Dir: dir, Env: env, Stdin: stdin, Stdout: ss.ch, Stderr: ss.ch.Stderr(),
	})
	return err
}

// channelStdin gives the command an *os.File as stdin, fed from the
// channel by a goroutine of ours: os/exec then has no copying goroutine of
// its own to wait for, so a command that exits without reading its input
// returns at once. stop closes the command's end; the feeder ends when the
// channel does (or on the first write after stop).
func channelStdin(ch ssh.Channel) (*os.File, func(), error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	go func() {
		io.Copy(pw, ch)
		pw.Close()
	}()
	return pr, func() { pr.Close() }, nil
}

// exitWith reports a command's outcome on the channel.
func (ss *session) exitWith(err error) {
	if err == nil {
		ss.finish(0, "")
		return
	}
	ss.mu.Lock()
	sig := ss.signaled
	ss.mu.Unlock()
	var xe *agentbe.ExitError
	switch {
	case errors.As(err, &xe) && xe.ExitCode >= 0:
		ss.finish(xe.ExitCode, "")
	case sig != "" || ss.ctx.Err() != nil || errors.As(err, &xe):
		if sig == "" {
			sig = "KILL"
		}
		ss.finish(0, sig)
	default:
		// The command could not run (refused as dangerous, bad directory,
		// no shell): the reason goes to stderr and the status is 1.
		io.WriteString(ss.ch.Stderr(), err.Error()+"\n")
		ss.finish(1, "")
	}
}

// fail reports an error that kept the session from starting.
func (ss *session) fail(err error) {
	io.WriteString(ss.ch.Stderr(), err.Error()+"\n")
	ss.finish(1, "")
}

// finish sends EOF, exit-status (or exit-signal when sig is set) and
// closes the channel.
func (ss *session) finish(code int, sig string) {
	ss.ch.CloseWrite()
	if sig != "" {
		ss.ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
			Signal     string
			CoreDumped bool
			Msg, Lang  string
		}{Signal: sig}))
	} else {
		ss.ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(code)}))
	}
	ss.ch.Close()
}

// shellCommand is what a shell request runs: the resolved shell, replacing
// the `-c` shell, interactive on a pty. On a pty, util-linux setsid (when
// installed) puts the shell in a session of its own with the pty as its
// controlling terminal, so job control and ^C work and closing the pty
// hangs the session up (SIGHUP), which is how it ends when the client goes
// away; the backend cannot give a command a controlling terminal itself.
func (s *Server) shellCommand(tty bool) string {
	sh := resolveShellPath(s.cfg.Shell)
	if !tty {
		return "exec " + sh
	}
	if setsid := setsidPath(); setsid != "" {
		return "exec " + setsid + " -w -c " + sh + " -i"
	}
	return "exec " + sh + " -i"
}

// setsidPath returns util-linux's setsid, if installed. It is looked up on
// the first interactive shell, not when the package is loaded (every
// agent-backend command and test binary imports it).
var setsidPath = sync.OnceValue(func() string {
	for _, p := range []string{"/usr/bin/setsid", "/bin/setsid"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
})

// resolveShellPath resolves the shell preference as the backend does
// (sandbox.ResolveShell); the backend would not have started without one,
// so /bin/sh is only a last resort.
func resolveShellPath(pref agentbe.Shell) string {
	if sh, err := sandbox.ResolveShell(string(pref)); err == nil {
		return sh
	}
	return "/bin/sh"
}
