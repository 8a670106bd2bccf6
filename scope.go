package agentbe

import (
	"context"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// scopeOwner is what a Scope can be created from: Local, Memory and Scope.
type scopeOwner interface {
	Backend
	// subtree returns an internal view confined to directory rel, whose
	// RootDir is the parent's joined with rel and which resolves paths
	// itself; for Local it has its own *os.Root, so links inside a scope
	// cannot reach its siblings.
	subtree(rel string) Backend
	scopeSet() *scopeSet
}

// Scope is a backend restricted to a sub-directory of another backend (any
// kind, or another Scope). Paths resolve against the scope's RootDir with the
// same rules as everywhere; a path leaving the scope is rejected even where
// the parent would accept it. Status is read from the parent on every call,
// Track goes to the root backend, and Destroy only unregisters the scope.
type Scope struct {
	parent   scopeOwner
	inner    Backend // the confined view that performs the operations
	rel      string  // scope path relative to the parent
	fullRel  string  // scope path relative to the root backend
	rootDir  string
	env      map[string]string
	log      opLog
	children *scopeSet

	destroyed atomic.Bool
	made      atomic.Bool // the scope directory is known to exist
	mkMu      sync.Mutex
	creations atomic.Int32 // times the scope directory was created (tests)

	subMu sync.Mutex
	subID int
	subs  map[int]scopeSub
}

// scopeSub is a status subscriber of a scope: fn hears the parent's
// transitions through the parent subscription unsub, and the scope's own
// move to StatusDestroyed.
type scopeSub struct {
	fn    func(old, new Status)
	unsub func()
}

var _ Backend = (*Scope)(nil)

func newScope(parent scopeOwner, p string, opts ScopeOptions) (*Scope, error) {
	rel, err := wspath.Resolve(parent.RootDir(), p)
	if err != nil {
		return nil, &Error{Code: CodePathEscape, Op: "scope", Path: p, Backend: parent.Kind(), Err: err}
	}
	var parentEnv map[string]string
	parentLog, fullRel := opLog{}, rel
	switch pp := parent.(type) {
	case *Scope:
		parentEnv, parentLog, fullRel = pp.env, pp.log, wspath.Within(pp.fullRel, rel)
	case *Local:
		parentLog = pp.log
	case *Memory:
		parentLog = pp.log
	case *Remote:
		parentLog = pp.core.logFor(pp.view)
	}
	lg := opLog{logger: opts.Logger, mode: opts.LogMode, scope: fullRel}
	if lg.logger == nil {
		lg.logger, lg.mode = parentLog.logger, parentLog.mode
	}
	inner := parent.subtree(rel)
	if opts.confinesExec() {
		lv, ok := inner.(*Local)
		if !ok {
			if r, ok := inner.(interface{ release() }); ok {
				r.release()
			}
			return nil, &Error{Code: CodeNotImplemented, Op: "scope", Path: p, Backend: parent.Kind(), Err: ErrNotImplemented,
				Reason: "resource limits, groups and network modes apply to scopes of Local backends"}
		}
		if err := lv.confine(opts); err != nil {
			lv.release()
			return nil, err
		}
	}
	s := &Scope{
		parent: parent, inner: inner, rel: rel, fullRel: fullRel,
		rootDir: wspath.Join(parent.RootDir(), rel), env: mergeMaps(parentEnv, opts.Env),
		log: lg, children: newScopeSet(),
	}
	parent.scopeSet().add(s)
	return s, nil
}

// Kind reports the kind of the backend the scope wraps.
func (s *Scope) Kind() Kind { return s.parent.Kind() }

// RootDir is the parent's root joined with the scope path.
func (s *Scope) RootDir() string { return s.rootDir }

// Path is the scope path relative to the root backend.
func (s *Scope) Path() string { return s.fullRel }

// Status is the parent's current status, or StatusDestroyed once the scope
// itself was destroyed.
func (s *Scope) Status() Status {
	if s.destroyed.Load() {
		return StatusDestroyed
	}
	return s.parent.Status()
}

// OnStatusChange subscribes fn to the scope's status transitions: those of
// the parent (ultimately the root backend) while the scope lives, and the
// scope's own move to StatusDestroyed.
func (s *Scope) OnStatusChange(fn func(old, new Status)) func() {
	unsub := s.parent.OnStatusChange(func(old, new Status) {
		if !s.destroyed.Load() {
			fn(old, new)
		}
	})
	s.subMu.Lock()
	if s.subs == nil {
		s.subs = map[int]scopeSub{}
	}
	id := s.subID
	s.subID++
	s.subs[id] = scopeSub{fn: fn, unsub: unsub}
	s.subMu.Unlock()
	return func() {
		s.subMu.Lock()
		sub, ok := s.subs[id]
		delete(s.subs, id)
		s.subMu.Unlock()
		if ok {
			sub.unsub()
		}
	}
}

// Track registers c with the root backend, which closes it on destroy, and
// returns the function that unregisters it there.
func (s *Scope) Track(c io.Closer) (untrack func()) { return s.parent.Track(c) }

// Destroy unregisters the scope from its parent, fires the scope's status
// subscribers (→ StatusDestroyed) and releases the scope's own directory
// handle; it never destroys the parent, and the root backend still owns
// everything tracked. Children of the scope become orphans whose
// operations fail with ErrDestroyed. Idempotent.
func (s *Scope) Destroy(context.Context) error {
	old := s.parent.Status()
	if !s.destroyed.CompareAndSwap(false, true) {
		return nil
	}
	s.parent.scopeSet().remove(s)
	s.releaseTree()
	s.subMu.Lock()
	subs := s.subs
	s.subs = nil
	s.subMu.Unlock()
	for id := 0; id < s.subID; id++ {
		if sub, ok := subs[id]; ok {
			sub.unsub()
			if old != StatusDestroyed {
				sub.fn(old, StatusDestroyed)
			}
		}
	}
	return nil
}

// releaseTree closes the directory handles of the scope and its children.
func (s *Scope) releaseTree() {
	if r, ok := s.inner.(interface{ release() }); ok {
		r.release()
	}
	s.children.mu.Lock()
	kids := make([]*Scope, 0, len(s.children.m))
	for c := range s.children.m {
		kids = append(kids, c)
	}
	s.children.mu.Unlock()
	for _, c := range kids {
		c.releaseTree()
	}
}

// Scope returns a nested scope; its path is joined with this scope's.
func (s *Scope) Scope(p string, opts ScopeOptions) (*Scope, error) {
	if err := s.alive("scope", p); err != nil {
		return nil, err
	}
	if s.Status() == StatusDestroyed {
		return nil, &Error{Code: CodeDestroyed, Op: "scope", Path: p, Backend: s.Kind(), Err: ErrDestroyed}
	}
	return newScope(s, p, opts)
}

func (s *Scope) subtree(rel string) Backend { return s.inner.(scopeOwner).subtree(rel) }
func (s *Scope) scopeSet() *scopeSet        { return s.children }

// alive fails if this scope or any ancestor scope was destroyed (a destroyed
// root backend is detected by the view itself).
func (s *Scope) alive(op, p string) error {
	for c := s; c != nil; {
		if c.destroyed.Load() {
			return &Error{Code: CodeDestroyed, Op: op, Path: p, Backend: s.Kind(), Err: ErrDestroyed}
		}
		c, _ = c.parent.(*Scope)
	}
	return nil
}

// ensureRoot creates the scope directory before the first modifying
// operation: exactly once, even with concurrent writers, and again on the
// next write if it failed.
func (s *Scope) ensureRoot(ctx context.Context) error {
	if s.made.Load() {
		return nil
	}
	s.mkMu.Lock()
	defer s.mkMu.Unlock()
	if s.made.Load() {
		return nil
	}
	s.creations.Add(1)
	if err := s.parent.(dirEnsurer).ensureDir(ctx, s.rel); err != nil {
		return err
	}
	s.made.Store(true)
	return nil
}

// dirEnsurer creates a directory (clean, relative to the receiver's root)
// without logging it as a user operation.
type dirEnsurer interface {
	ensureDir(ctx context.Context, rel string) error
}

func (s *Scope) ensureDir(ctx context.Context, rel string) error {
	if err := s.ensureRoot(ctx); err != nil {
		return err
	}
	return s.inner.(dirEnsurer).ensureDir(ctx, rel)
}

// run wraps an operation with the liveness check, optional scope creation
// and logging.
func (s *Scope) run(ctx context.Context, op, p string, write bool, fn func() error) error {
	return s.runLogged(ctx, s.log.begin(ctx, op, p), op, p, write, fn)
}

// runLogged is run with the log entry already begun (two-path operations).
func (s *Scope) runLogged(ctx context.Context, done func(error), op, p string, write bool, fn func() error) error {
	err := s.alive(op, p)
	if err == nil && write {
		err = s.ensureRoot(ctx)
	}
	if err == nil {
		err = fn()
	}
	done(err)
	return err
}

// Read returns the content of the file p.
func (s *Scope) Read(ctx context.Context, p string) (data []byte, err error) {
	err = s.run(ctx, "read", p, false, func() error { data, err = s.inner.Read(ctx, p); return err })
	return data, err
}

// Write replaces the file p atomically; see Local.Write.
func (s *Scope) Write(ctx context.Context, p string, data []byte) error {
	return s.run(ctx, "write", p, true, func() error { return s.inner.Write(ctx, p, data) })
}

// Open streams the file p.
func (s *Scope) Open(ctx context.Context, p string) (rc io.ReadCloser, err error) {
	err = s.run(ctx, "open", p, false, func() error { rc, err = s.inner.Open(ctx, p); return err })
	return rc, err
}

// Create returns an atomic writer for p; see Local.Create. The scope logs
// the outcome when the writer is closed.
func (s *Scope) Create(ctx context.Context, p string) (io.WriteCloser, error) {
	done := s.log.begin(ctx, "create", p)
	err := s.alive("create", p)
	if err == nil {
		err = s.ensureRoot(ctx)
	}
	var wc io.WriteCloser
	if err == nil {
		wc, err = s.inner.Create(ctx, p)
	}
	if err != nil {
		done(err)
		return nil, err
	}
	return &loggedWriter{WriteCloser: wc, done: done}, nil
}

// loggedWriter logs the outcome of Close.
type loggedWriter struct {
	io.WriteCloser
	done func(error)
}

func (w *loggedWriter) Close() error {
	err := w.WriteCloser.Close()
	w.done(err)
	return err
}

// ReadFrom keeps io.Copy on the fast path of the underlying writer.
func (w *loggedWriter) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := w.WriteCloser.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{w.WriteCloser}, r)
}

// ReadDir lists directory p.
func (s *Scope) ReadDir(ctx context.Context, p string) (names []string, err error) {
	err = s.run(ctx, "readdir", p, false, func() error { names, err = s.inner.ReadDir(ctx, p); return err })
	return names, err
}

// Mkdir creates directory p and its parents.
func (s *Scope) Mkdir(ctx context.Context, p string) error {
	return s.run(ctx, "mkdir", p, true, func() error { return s.inner.Mkdir(ctx, p) })
}

// Exists reports whether p exists.
func (s *Scope) Exists(ctx context.Context, p string) (ok bool, err error) {
	err = s.run(ctx, "exists", p, false, func() error { ok, err = s.inner.Exists(ctx, p); return err })
	return ok, err
}

// Stat describes p, following links.
func (s *Scope) Stat(ctx context.Context, p string) (fi fs.FileInfo, err error) {
	err = s.run(ctx, "stat", p, false, func() error { fi, err = s.inner.Stat(ctx, p); return err })
	return fi, err
}

// Lstat describes p without following a final link.
func (s *Scope) Lstat(ctx context.Context, p string) (fi fs.FileInfo, err error) {
	err = s.run(ctx, "lstat", p, false, func() error { fi, err = s.inner.Lstat(ctx, p); return err })
	return fi, err
}

// Remove deletes p; see RemoveOptions.
func (s *Scope) Remove(ctx context.Context, p string, opts RemoveOptions) error {
	return s.run(ctx, "remove", p, false, func() error { return s.inner.Remove(ctx, p, opts) })
}

// Rename moves oldPath to newPath inside the scope.
func (s *Scope) Rename(ctx context.Context, oldPath, newPath string) error {
	return s.runLogged(ctx, s.log.begin2(ctx, "rename", oldPath, newPath), "rename", oldPath, true,
		func() error { return s.inner.Rename(ctx, oldPath, newPath) })
}

// Touch creates p if missing; see Local.Touch.
func (s *Scope) Touch(ctx context.Context, p string) error {
	return s.run(ctx, "touch", p, true, func() error { return s.inner.Touch(ctx, p) })
}

// RealPath resolves p inside the scope; a link leading out of the scope is
// an error even if its target is inside the parent.
func (s *Scope) RealPath(ctx context.Context, p string) (real string, err error) {
	err = s.run(ctx, "realpath", p, false, func() error { real, err = s.inner.RealPath(ctx, p); return err })
	return real, err
}

// execCollector runs a command and also returns the stderr it collected,
// for the scope's log.
type execCollector interface {
	exec(ctx context.Context, command string, opts ExecOptions) ([]byte, string, error)
}

// Exec runs command in the scope directory (the sandbox workspace under
// bwrap is the scope directory, so siblings are invisible). The scope's
// environment chain is merged under opts.Env.
func (s *Scope) Exec(ctx context.Context, command string, opts ExecOptions) ([]byte, error) {
	start := time.Now()
	var out []byte
	err := s.alive("exec", "")
	if err == nil && Executes(s) {
		err = s.ensureRoot(ctx)
	}
	stderr := ""
	if err == nil {
		opts.Env = mergeMaps(s.env, opts.Env)
		if c, ok := s.inner.(execCollector); ok {
			out, stderr, err = c.exec(ctx, command, opts)
		} else {
			out, err = s.inner.Exec(ctx, command, opts)
		}
	}
	if s.log.logger != nil {
		s.log.logExec(ctx, start, command, string(out), stderr, err)
	}
	return out, err
}

// runner returns the scope's process runner, or an error where the backend
// it wraps runs none.
func (s *Scope) runner(op string) (ProcessRunner, error) {
	if err := s.alive(op, ""); err != nil {
		return nil, err
	}
	if r, ok := s.inner.(ProcessRunner); ok && Executes(s) {
		return r, nil
	}
	return nil, &Error{Code: CodeNotImplemented, Op: op, Backend: s.Kind(), Err: ErrNotImplemented}
}

// StartProcess starts command in the scope directory (see
// Local.StartProcess); the scope's environment chain is merged under
// opts.Env. The process belongs to the scope's directory: only scopes of
// that directory see it, and it outlives this Scope value (until it exits
// or the root backend is destroyed).
func (s *Scope) StartProcess(ctx context.Context, command string, opts ProcessOptions) (*Process, error) {
	r, err := s.runner("process")
	if err != nil {
		return nil, err
	}
	if err := s.ensureRoot(ctx); err != nil {
		return nil, err
	}
	opts.Env = mergeMaps(s.env, opts.Env)
	return r.StartProcess(ctx, command, opts)
}

// Process returns the scope's process of that id.
func (s *Scope) Process(ctx context.Context, id string) (*Process, error) {
	r, err := s.runner("process")
	if err != nil {
		return nil, err
	}
	return r.Process(ctx, id)
}

// Processes lists the scope's processes.
func (s *Scope) Processes(ctx context.Context) ([]ProcessInfo, error) {
	r, err := s.runner("process")
	if err != nil {
		return nil, err
	}
	return r.Processes(ctx)
}

// RemoveProcess forgets an exited process of the scope.
func (s *Scope) RemoveProcess(ctx context.Context, id string) error {
	r, err := s.runner("process")
	if err != nil {
		return err
	}
	return r.RemoveProcess(ctx, id)
}

var _ ProcessRunner = (*Scope)(nil)
