package agentbe

import (
	"context"
	"errors"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentbe/agent-backend/internal/outring"
	"github.com/agentbe/agent-backend/internal/procs"
	"github.com/agentbe/agent-backend/internal/pty"
	"github.com/agentbe/agent-backend/internal/sandbox"
)

// processTable holds the processes of a Local and of every scope of it,
// each under the key of the scope that started it.
type processTable struct {
	mu      sync.Mutex
	nextID  uint64
	byID    map[string]*localProc
	running map[string]int // per key
}

func newProcessTable() *processTable {
	return &processTable{byID: map[string]*localProc{}, running: map[string]int{}}
}

// reserve takes a running slot of key, or fails at the cap.
func (t *processTable) reserve(key string, max int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running[key] >= max {
		return false
	}
	t.running[key]++
	return true
}

// release gives a slot back.
func (t *processTable) release(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running[key]--; t.running[key] <= 0 {
		delete(t.running, key)
	}
}

// add registers p under a new id and forgets the oldest exited processes
// of its key beyond keep.
func (t *processTable) add(p *localProc, keep int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nextID++
	p.id = "proc_" + strconv.FormatUint(t.nextID, 10)
	p.num = t.nextID
	t.byID[p.id] = p
	t.trimLocked(p.key, keep)
}

// trim forgets the oldest exited processes of key beyond keep.
func (t *processTable) trim(key string, keep int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.trimLocked(key, keep)
}

func (t *processTable) trimLocked(key string, keep int) {
	var exited []*localProc
	for _, q := range t.byID {
		if q.key == key && q.hasExited() {
			exited = append(exited, q)
		}
	}
	if len(exited) > keep {
		sort.Slice(exited, func(i, j int) bool { return exited[i].num < exited[j].num })
		for _, q := range exited[:len(exited)-keep] {
			delete(t.byID, q.id)
		}
	}
}

func (t *processTable) get(key, id string) *localProc {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.byID[id]; p != nil && p.key == key {
		return p
	}
	return nil
}

func (t *processTable) list(key string) []*localProc {
	t.mu.Lock()
	var ps []*localProc
	for _, p := range t.byID {
		if p.key == key {
			ps = append(ps, p)
		}
	}
	t.mu.Unlock()
	sort.Slice(ps, func(i, j int) bool { return ps[i].num < ps[j].num })
	return ps
}

func (t *processTable) remove(key, id string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.byID[id]
	if p == nil || p.key != key {
		return ErrProcessNotFound
	}
	if !p.hasExited() {
		return ErrProcessRunning
	}
	delete(t.byID, id)
	return nil
}

// localProc is a process of a Local.
type localProc struct {
	// release ends the process's time limit and removes its cgroup once
	// it has ended (launched.release).
	release func()
	id, key string
	num     uint64
	command string // as given (the program, when args is non-nil)
	args    []string
	dir     string
	tty     bool
	started time.Time
	pid     int

	sc     *sandbox.Cmd
	stdin  *os.File // pipe write end, or the pty master
	master *os.File // the pty master in TTY mode
	ring   *outring.Ring
	done   chan struct{}
	wmu    chan struct{} // one writer at a time

	mu       sync.Mutex
	exited   bool
	exitCode int
	sigName  string
	exitedAt time.Time
	stdinEOF bool
}

func (p *localProc) hasExited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// maxProcesses is the per-scope cap on concurrent processes.
func (l *Local) maxProcesses() int {
	if l.cfg.MaxProcesses > 0 {
		return l.cfg.MaxProcesses
	}
	return DefaultMaxProcesses
}

// processKey is the key of this backend's (or view's) processes: its
// workspace directory, so every scope of one directory shares them and no
// other scope sees them.
func (l *Local) processKey() string { return l.rootDir }

// StartProcess starts command in the background; see ProcessRunner. It
// goes through the same checks and launch as Exec (safety check, software
// path heuristic, working directory, environment, isolation, its own
// process group), then returns instead of waiting. The process is killed
// when the backend is destroyed.
//
// In TTY mode the process runs in a session of its own with the pty as
// its controlling terminal (under bwrap, through util-linux setsid inside
// the sandbox), so ^C written to it interrupts its foreground job.
func (l *Local) StartProcess(ctx context.Context, command string, opts ProcessOptions) (*Process, error) {
	p, err := l.startProcess(ctx, command, opts)
	if err != nil {
		return nil, err
	}
	return &Process{id: p.id, impl: p}, nil
}

func (l *Local) startProcess(_ context.Context, command string, opts ProcessOptions) (*localProc, error) {
	line := command
	if opts.Args != nil {
		line = "exec " + shellQuote(command)
		for _, a := range opts.Args {
			line += " " + shellQuote(a)
		}
	}
	if strings.TrimSpace(command) == "" {
		return nil, &Error{Code: CodeEmptyCommand, Op: "process", Backend: KindLocal, Err: ErrEmptyCommand}
	}
	for _, a := range opts.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, &Error{Code: CodeExecError, Op: "process", Command: command, Backend: KindLocal,
				Err: errors.New("argument contains NUL")}
		}
	}
	lo := launchOptions{dir: opts.Dir, env: opts.Env}
	if opts.TTY && l.sb.Mode() == sandbox.Bwrap {
		// bwrap starts the command in a new session (--new-session), so the
		// pty can only become its controlling terminal from inside.
		if setsid := setsidBinary(); setsid != "" {
			lo.wrap = func(c string) string {
				return "exec " + setsid + " -w -c " + shellQuote(l.shell) + " -c " + shellQuote(c)
			}
		}
	}
	key, max := l.processKey(), l.maxProcesses()
	if !l.procs.reserve(key, max) {
		return nil, &Error{Code: CodeTooManyProcesses, Op: "process", Command: command, Backend: KindLocal,
			Reason: "the scope runs " + strconv.Itoa(max) + " processes already", Err: ErrTooManyProcesses}
	}
	p, err := l.launchProcess(line, command, opts, lo)
	if err != nil {
		l.procs.release(key)
		return nil, err
	}
	p.key = key
	l.procs.add(p, max)
	go l.reap(p)
	return p, nil
}

// launchProcess starts the process: launch, then its stdio.
func (l *Local) launchProcess(line, command string, opts ProcessOptions, lo launchOptions) (*localProc, error) {
	// The process outlives the call: only Kill (or Destroy) ends it.
	ln, err := l.launch(context.Background(), "process", line, lo)
	if err != nil {
		return nil, err
	}
	sc, host := ln.sc, ln.host
	p := &localProc{command: command, args: opts.Args, dir: opts.Dir, tty: opts.TTY,
		sc: sc, release: ln.release, ring: newOutputRing(opts.OutputBytes), done: make(chan struct{}), wmu: make(chan struct{}, 1)}
	cmd := sc.Cmd
	cmd.WaitDelay = 2 * time.Second
	var child []*os.File // the child's ends, closed once started
	fail := func(err error) (*localProc, error) {
		for _, f := range child {
			f.Close()
		}
		if p.stdin != nil {
			p.stdin.Close()
		}
		sc.Done()
		ln.release()
		return nil, &Error{Code: CodeExecError, Op: "process", Command: command, Backend: KindLocal,
			Err: errors.New("cannot start process: " + scrubHost(err.Error(), host))}
	}
	if opts.TTY {
		master, slave, err := pty.Open()
		if err != nil {
			return fail(err)
		}
		cols, rows := opts.Cols, opts.Rows
		if cols <= 0 || rows <= 0 {
			cols, rows = 80, 24
		}
		_ = pty.SetSize(master, cols, rows)
		p.master, p.stdin = master, master
		child = append(child, slave)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		if l.sb.Mode() != sandbox.Bwrap {
			// A session of its own (also a process group of its own, so
			// the group kill still reaches it) with the pty as its
			// controlling terminal.
			cmd.SysProcAttr.Setpgid = false
			cmd.SysProcAttr.Setsid = true
			cmd.SysProcAttr.Setctty = true
			cmd.SysProcAttr.Ctty = 0
		}
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		p.stdin = w
		child = append(child, r)
		cmd.Stdin = r
		cmd.Stdout = ringWriter{p.ring, StreamStdout}
		cmd.Stderr = ringWriter{p.ring, StreamStderr}
	}
	startErr := procs.Start(cmd)
	// Under cgroup v1 this places the process in its cgroup and lets it go.
	placeErr := sc.Started()
	for _, f := range child {
		f.Close()
	}
	child = nil
	if startErr != nil {
		return fail(startErr)
	}
	if placeErr != nil {
		cmd.Wait() // Started killed it before it ran a line of the command
		return fail(errors.New("cannot confine process: " + scrubCgroup(placeErr)))
	}
	p.pid = cmd.Process.Pid
	p.started = time.Now()
	return p, nil
}

// setsidBinary is util-linux setsid, if installed.
var setsidBinary = sync.OnceValue(func() string {
	for _, p := range []string{"/usr/bin/setsid", "/bin/setsid"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
})

// ringWriter feeds one stream of a process into its ring (os/exec copies
// the pipe into it).
type ringWriter struct {
	r *outring.Ring
	s Stream
}

func (w ringWriter) Write(b []byte) (int, error) {
	w.r.Add(string(w.s), b)
	return len(b), nil
}

// reap waits for the process, drains a pty, records the exit and releases
// what the process held.
func (l *Local) reap(p *localProc) {
	untrack := l.life.track(p.sc)
	var outDone chan struct{}
	if p.master != nil {
		outDone = make(chan struct{})
		go func() {
			defer close(outDone)
			buf := make([]byte, 32<<10)
			for {
				n, err := p.master.Read(buf)
				p.ring.Add(string(StreamPTY), buf[:n])
				if err != nil {
					return
				}
			}
		}()
	}
	err := p.sc.Cmd.Wait()
	if outDone != nil {
		// Output still buffered in the pty; a background job may hold
		// the terminal open, so not for long.
		select {
		case <-outDone:
		case <-time.After(ptyDrainTime):
		}
	}
	p.mu.Lock()
	p.exited, p.exitedAt = true, time.Now()
	p.exitCode = 0
	if st := p.sc.Cmd.ProcessState; st != nil {
		p.exitCode = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.exitCode, p.sigName = -1, signalName(ws.Signal())
		}
	} else if err != nil {
		p.exitCode = -1
	}
	p.stdin.Close()
	p.mu.Unlock()
	if outDone != nil {
		<-outDone
	}
	p.ring.Close()
	untrack()
	p.sc.Done()
	p.release()
	l.procs.release(p.key)
	l.procs.trim(p.key, l.maxProcesses())
	close(p.done)
}

// ptyDrainTime bounds how long a pty's buffered output is read after the
// process exited.
const ptyDrainTime = 500 * time.Millisecond

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGHUP:
		return string(SIGHUP)
	case syscall.SIGINT:
		return string(SIGINT)
	case syscall.SIGKILL:
		return string(SIGKILL)
	case syscall.SIGTERM:
		return string(SIGTERM)
	}
	return strings.TrimPrefix(strings.ToUpper(s.String()), "SIG")
}

func (p *localProc) info(context.Context) (ProcessInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	in := ProcessInfo{ID: p.id, Command: p.command, Args: p.args, Dir: p.dir, TTY: p.tty,
		Running: !p.exited, StartedAt: p.started, ExitCode: -1}
	if p.exited {
		in.ExitCode, in.Signal, in.ExitedAt = p.exitCode, p.sigName, p.exitedAt
	} else {
		in.PID = p.pid
	}
	return in, nil
}

func (p *localProc) wait(ctx context.Context) (ProcessInfo, error) {
	select {
	case <-p.done:
		return p.info(ctx)
	case <-ctx.Done():
		return ProcessInfo{}, ctx.Err()
	}
}

func (p *localProc) write(ctx context.Context, b []byte) (int, error) {
	// One writer at a time (a large write is not split by another), and a
	// writer blocked on a process that does not read gives up with ctx.
	select {
	case p.wmu <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-p.wmu }()
	p.mu.Lock()
	dead := p.exited || p.stdinEOF
	p.mu.Unlock()
	if dead {
		return 0, &Error{Code: CodeProcessConflict, Op: "process input", Backend: KindLocal, Err: ErrProcessExited}
	}
	stop := context.AfterFunc(ctx, func() { _ = p.stdin.SetWriteDeadline(time.Unix(1, 0)) })
	n, err := p.stdin.Write(b)
	if !stop() {
		_ = p.stdin.SetWriteDeadline(time.Time{})
	}
	if err != nil {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		return n, &Error{Code: CodeProcessConflict, Op: "process input", Backend: KindLocal, Err: ErrProcessExited}
	}
	return n, nil
}

func (p *localProc) closeStdin(ctx context.Context) error {
	if p.tty {
		_, err := p.write(ctx, []byte{4})
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stdinEOF && !p.exited {
		p.stdinEOF = true
		return p.stdin.Close()
	}
	return nil
}

func (p *localProc) signal(_ context.Context, sig Signal) error {
	var s syscall.Signal
	switch sig {
	case SIGHUP:
		s = syscall.SIGHUP
	case SIGINT:
		s = syscall.SIGINT
	case SIGKILL:
		s = syscall.SIGKILL
	case SIGTERM:
		s = syscall.SIGTERM
	default:
		return &Error{Code: CodeExecError, Op: "process signal", Backend: KindLocal,
			Err: errors.New("unsupported signal " + strconv.Quote(string(sig)))}
	}
	// The lock keeps reap from releasing the process (and its pid being
	// reused) while the signal is sent.
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return nil
	}
	if p.master != nil {
		pg := pty.ForegroundGroup(p.master)
		if s == syscall.SIGINT && pg > 0 {
			// As ^C: the foreground group only. An interactive shell
			// that got it too while its job ran could take it once back
			// at its prompt, and drop the next line it reads.
			if err := syscall.Kill(-pg, s); err != nil && !errors.Is(err, syscall.ESRCH) {
				return err
			}
			return nil
		}
		if pg > 0 && pg != p.pid {
			_ = syscall.Kill(-pg, s)
		}
	}
	return p.sc.Signal(s)
}

func (p *localProc) output(ctx context.Context, since uint64, follow bool, fn func(OutputEntry) error) error {
	return p.ring.Read(ctx, since, follow, func(e outring.Entry) error {
		return fn(OutputEntry{Seq: e.Seq, Stream: Stream(e.Stream), Time: e.Time, Data: e.Data, Dropped: e.Dropped})
	})
}

// newOutputRing returns a process's output ring of max bytes (0: the
// default).
func newOutputRing(max int) *outring.Ring {
	if max <= 0 {
		max = DefaultProcessOutputBytes
	}
	return outring.New(max)
}

func (p *localProc) resize(_ context.Context, cols, rows int) error {
	if p.master == nil {
		return &Error{Code: CodeProcessConflict, Op: "process resize", Backend: KindLocal, Err: ErrNotTTY}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return &Error{Code: CodeProcessConflict, Op: "process resize", Backend: KindLocal, Err: ErrProcessExited}
	}
	return pty.SetSize(p.master, max(cols, 1), max(rows, 1))
}

// Process returns the process of that id started from this backend (not
// from a scope of it).
func (l *Local) Process(_ context.Context, id string) (*Process, error) {
	if p := l.procs.get(l.processKey(), id); p != nil {
		return &Process{id: id, impl: p}, nil
	}
	return nil, &Error{Code: CodeProcessNotFound, Op: "process", Backend: KindLocal,
		Reason: "no process " + id, Err: ErrProcessNotFound}
}

// Processes lists the processes started from this backend (not from its
// scopes), running and exited, oldest first.
func (l *Local) Processes(ctx context.Context) ([]ProcessInfo, error) {
	ps := l.procs.list(l.processKey())
	out := make([]ProcessInfo, 0, len(ps))
	for _, p := range ps {
		in, _ := p.info(ctx)
		out = append(out, in)
	}
	return out, nil
}

// RemoveProcess forgets an exited process; see ProcessRunner.
func (l *Local) RemoveProcess(_ context.Context, id string) error {
	switch err := l.procs.remove(l.processKey(), id); {
	case errors.Is(err, ErrProcessNotFound):
		return &Error{Code: CodeProcessNotFound, Op: "process", Backend: KindLocal,
			Reason: "no process " + id, Err: err}
	case err != nil:
		return &Error{Code: CodeProcessConflict, Op: "process", Backend: KindLocal,
			Reason: "process " + id + " is still running; stop or kill it first", Err: err}
	}
	return nil
}

// shellQuote quotes s as one word of a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var (
	_ ProcessRunner = (*Local)(nil)
	_ io.Writer     = (*Process)(nil)
)
