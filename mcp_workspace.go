package agentbe

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/agentbe/agent-backend/internal/beneath"
	"github.com/agentbe/agent-backend/internal/fstools"
	"github.com/agentbe/agent-backend/internal/wspath"
)

// The MCP file tools (internal/fstools) take fast paths where a workspace
// offers them: a one-pass listing with entry types (DirEntryReader),
// write_file's common case in one resolution (DirectWriter), directories
// that exist implicitly (ImplicitDirs), whole-file reads within the read
// limit (Read with ReadLimiter). The backends keep those methods
// unexported, so they stay out of the library's API; toolsWorkspace hands
// the tools an adapter per backend kind that reaches them. A Scope forwards
// them to its confined view of the parent (whose root is the scope's, so
// paths need no rebasing), so a scoped request, what the daemon serves for
// X-Scope-Path, takes the same fast paths as the workspace itself.
//
// The matrix, checked by the compiler:
//
//	                    ReadLimiter  DirEntryReader  DirectWriter  ImplicitDirs
//	Local, its scopes        x             x              x
//	Memory, its scopes       x             x                            x
//	Remote, its scopes       x
var (
	_ fstools.ReadLimiter    = localTools{}
	_ fstools.DirEntryReader = localTools{}
	_ fstools.DirectWriter   = localTools{}
	_ fstools.ReadLimiter    = localScopeTools{}
	_ fstools.DirEntryReader = localScopeTools{}
	_ fstools.DirectWriter   = localScopeTools{}
	_ fstools.ReadLimiter    = memoryTools{}
	_ fstools.DirEntryReader = memoryTools{}
	_ fstools.ImplicitDirs   = memoryTools{}
	_ fstools.ReadLimiter    = memoryScopeTools{}
	_ fstools.DirEntryReader = memoryScopeTools{}
	_ fstools.ImplicitDirs   = memoryScopeTools{}
	_ fstools.ReadLimiter    = (*Remote)(nil)
	_ fstools.ReadLimiter    = (*Scope)(nil)
)

// toolsWorkspace returns what the MCP file tools operate on for b: b
// through the adapter of its kind (a scope's kind is its root backend's),
// or b itself for a backend of another package.
func toolsWorkspace(b Backend) fstools.Workspace {
	switch v := b.(type) {
	case *Local:
		return localTools{v}
	case *Memory:
		return memoryTools{v}
	case *Scope:
		switch scopeRoot(v).(type) {
		case *Local:
			return localScopeTools{v}
		case *Memory:
			return memoryScopeTools{v}
		}
	}
	return b
}

// scopeRoot returns the backend a scope (through its parents) belongs to.
func scopeRoot(s *Scope) Backend {
	var b Backend = s
	for {
		sc, ok := b.(*Scope)
		if !ok {
			return b
		}
		b = sc.parent
	}
}

// Each adapter is one pointer, so handing it to the tools allocates nothing.
type (
	localTools       struct{ *Local }
	localScopeTools  struct{ *Scope }
	memoryTools      struct{ *Memory }
	memoryScopeTools struct{ *Scope }
)

func (w localTools) ReadDirEntries(ctx context.Context, p string) ([]fs.DirEntry, error) {
	return w.readDirEntries(ctx, p)
}

func (w localTools) WriteInDir(ctx context.Context, p string, data []byte) (bool, error) {
	return w.writeInDir(ctx, p, data)
}

func (w localScopeTools) ReadDirEntries(ctx context.Context, p string) ([]fs.DirEntry, error) {
	return w.readDirEntries(ctx, p)
}

func (w localScopeTools) WriteInDir(ctx context.Context, p string, data []byte) (bool, error) {
	return w.writeInDir(ctx, p, data)
}

func (w memoryTools) ReadDirEntries(ctx context.Context, p string) ([]fs.DirEntry, error) {
	return w.readDirEntries(ctx, p)
}

func (w memoryTools) ImplicitDirs() bool { return w.implicitDirs() }

func (w memoryScopeTools) ReadDirEntries(ctx context.Context, p string) ([]fs.DirEntry, error) {
	return w.readDirEntries(ctx, p)
}

func (w memoryScopeTools) ImplicitDirs() bool { return w.implicitDirs() }

// The fast paths of the backends a Scope forwards to its view.
type (
	dirEntryReader interface {
		readDirEntries(ctx context.Context, p string) ([]fs.DirEntry, error)
	}
	inDirWriter interface {
		writeInDir(ctx context.Context, p string, data []byte) (bool, error)
	}
	implicitDirser interface{ implicitDirs() bool }
)

var (
	_ dirEntryReader = (*Local)(nil)
	_ dirEntryReader = (*Memory)(nil)
	_ dirEntryReader = (*Scope)(nil)
	_ inDirWriter    = (*Local)(nil)
	_ inDirWriter    = (*Scope)(nil)
	_ implicitDirser = (*Memory)(nil)
	_ implicitDirser = (*Scope)(nil)
)

// readDirEntries lists directory p of the scope; see Local.readDirEntries.
func (s *Scope) readDirEntries(ctx context.Context, p string) (entries []fs.DirEntry, err error) {
	err = s.run(ctx, "readdir", p, false, func() error {
		if r, ok := s.inner.(dirEntryReader); ok {
			entries, err = r.readDirEntries(ctx, p)
			return err
		}
		return ErrNotImplemented
	})
	return entries, err
}

// writeInDir is Local.writeInDir in the scope: it declines (false, and
// nothing changed) whatever the view declines, and when the scope is
// destroyed or its directory does not exist yet (the general path, which
// creates it, then answers).
func (s *Scope) writeInDir(ctx context.Context, p string, data []byte) (bool, error) {
	w, ok := s.inner.(inDirWriter)
	if !ok || s.alive("write", p) != nil {
		return false, nil
	}
	done := s.log.begin(ctx, "write", p) // logged only if the view writes
	wrote, err := w.writeInDir(ctx, p, data)
	if wrote {
		done(err)
	}
	return wrote, err
}

// implicitDirs reports whether the scope's backend has implicit
// directories (a Memory backend does).
func (s *Scope) implicitDirs() bool {
	d, ok := s.inner.(implicitDirser)
	return ok && d.implicitDirs()
}

// readDirEntries lists directory p as sorted fs.DirEntry values whose types
// come from lstat (a link is never a directory), in one pass over the
// directory; it spares callers one Lstat per name. The MCP list tools use
// it (toolsWorkspace).
func (l *Local) readDirEntries(ctx context.Context, p string) ([]fs.DirEntry, error) {
	done := l.log.begin(ctx, "readdir", p)
	f, _, r, rel, err := l.openIn(ctx, "readdir", p)
	if err != nil {
		done(err)
		return nil, err
	}
	defer f.Close()
	entries, err := beneath.ReadDir(f, r, rel)
	if err != nil {
		err = l.fail("readdir", p, err)
		done(err)
		return nil, err
	}
	done(nil)
	return entries, nil
}

// readDirEntries lists the immediate children of prefix p with synthetic
// information; see ReadDir.
func (m *Memory) readDirEntries(ctx context.Context, p string) ([]fs.DirEntry, error) {
	infos, err := m.children(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, len(infos))
	for i, info := range infos {
		out[i] = fs.FileInfoToDirEntry(info)
	}
	return out, nil
}

// implicitDirs reports that directories exist only through the keys below
// them, so tools must not require a parent directory to exist.
func (m *Memory) implicitDirs() bool { return true }

// writeInDir writes p as Write does, but only in the common case: p's
// directory exists and p is a regular file, or does not exist and its name
// is ASCII. In any other case (a missing directory, a link, a directory or
// any other entry at p, a non-ASCII name that may match an existing one in
// another Unicode normal form) it reports false and changes nothing,
// leaving the case to the caller's own rules. It is write_file's fast path
// (toolsWorkspace): write_file must not create directories and words each
// of those cases as the official server does, through checks that cost
// three walks of the path; measured at 32 concurrent 4 KiB writes, they
// were a third of the daemon's CPU.
func (l *Local) writeInDir(ctx context.Context, p string, data []byte) (bool, error) {
	r, _, rel, err := l.at(ctx, "write", p)
	if err != nil || rel == "." {
		return false, nil
	}
	done := l.log.begin(ctx, "write", p) // logged only if this call writes
	if ok, err := beneath.Write(ctx, l.jail.dirFile(), rel, data, wspath.IsASCII(rel)); ok {
		err = l.fail("write", p, err)
		done(err)
		return true, err
	}
	a := createInParent(ctx, r, rel, wspath.IsASCII(rel))
	if a == nil {
		return false, nil
	}
	err = l.commit(p, a, data)
	done(err)
	return true, err
}

// mcpProcesses serves the MCP process tools (MCPServerOptions.Processes)
// from a backend's ProcessRunner.
type mcpProcesses struct{ r ProcessRunner }

func (m mcpProcesses) state(ctx context.Context, p *Process) (fstools.ProcessState, error) {
	in, err := p.Info(ctx)
	if err != nil {
		return fstools.ProcessState{}, err
	}
	return toolState(in), nil
}

func toolState(in ProcessInfo) fstools.ProcessState {
	st := fstools.ProcessState{ID: in.ID, Command: in.Command, Status: "running", PID: in.PID}
	if !in.Running {
		st.Status = "exited"
		if in.ExitCode >= 0 {
			code := in.ExitCode
			st.ExitCode = &code
		}
	}
	return st
}

func (m mcpProcesses) StartProcess(ctx context.Context, command string, o fstools.ProcessStart) (fstools.ProcessState, error) {
	p, err := m.r.StartProcess(ctx, command, ProcessOptions{Dir: o.Dir, Env: o.Env, TTY: o.TTY})
	if err != nil {
		return fstools.ProcessState{}, err
	}
	return m.state(ctx, p)
}

func (m mcpProcesses) ReadProcess(ctx context.Context, id string, since uint64, wait time.Duration) (fstools.ProcessRead, error) {
	p, err := m.r.Process(ctx, id)
	if err != nil {
		return fstools.ProcessRead{}, err
	}
	es, err := p.Output(ctx, since)
	if err == nil && len(es) == 0 && wait > 0 {
		// Wait for the first new entry (or the end of the output).
		wctx, cancel := context.WithTimeout(ctx, wait)
		first := errors.New("first")
		ferr := p.Follow(wctx, since, func(e OutputEntry) error {
			es = append(es, e)
			return first
		})
		cancel()
		if ferr != nil && ferr != first && !errors.Is(ferr, context.DeadlineExceeded) {
			return fstools.ProcessRead{}, ferr
		}
		if len(es) > 0 {
			es, err = p.Output(ctx, since) // everything there is by now
		}
	}
	if err != nil {
		return fstools.ProcessRead{}, err
	}
	st, err := m.state(ctx, p)
	if err != nil {
		return fstools.ProcessRead{}, err
	}
	r := fstools.ProcessRead{State: st}
	for _, e := range es {
		r.Dropped += e.Dropped
		r.Entries = append(r.Entries, fstools.ProcessEntry{Seq: e.Seq, Stream: string(e.Stream), Data: e.Data})
	}
	return r, nil
}

func (m mcpProcesses) WriteProcess(ctx context.Context, id string, data []byte) (int, error) {
	p, err := m.r.Process(ctx, id)
	if err != nil {
		return 0, err
	}
	return p.WriteContext(ctx, data)
}

func (m mcpProcesses) StopProcess(ctx context.Context, id string, kill bool, wait time.Duration) (fstools.ProcessState, error) {
	p, err := m.r.Process(ctx, id)
	if err != nil {
		return fstools.ProcessState{}, err
	}
	sig := SIGTERM
	if kill {
		sig = SIGKILL
	}
	if err := p.Signal(ctx, sig); err != nil {
		return fstools.ProcessState{}, err
	}
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		_, _ = p.Wait(wctx)
		cancel()
	}
	return m.state(ctx, p)
}

func (m mcpProcesses) ListProcesses(ctx context.Context) ([]fstools.ProcessState, error) {
	ps, err := m.r.Processes(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]fstools.ProcessState, 0, len(ps))
	for _, in := range ps {
		out = append(out, toolState(in))
	}
	return out, nil
}
