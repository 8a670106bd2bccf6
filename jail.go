package agentbe

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/agentbe/agent-backend/internal/beneath"
	"github.com/agentbe/agent-backend/internal/replace"
	"github.com/agentbe/agent-backend/internal/wspath"
)

// jail is an *os.Root on a workspace directory, opened lazily for scopes
// (whose directory may not exist yet). Every file access of a Local backend
// goes through it, so no symbolic link can lead outside.
//
// Ownership is explicit: the workspace root's handles belong to the
// backend's lifecycle (closed by Destroy, never by close); a scope jail owns
// the handles it opened itself in get and dirFile, and close releases only
// those; an alias (a scope of its parent's own directory) opens nothing and
// borrows its parent's handles, so closing it only marks it closed.
type jail struct {
	parent *jail  // nil for the workspace root
	rel    string // path of this jail relative to parent
	alias  bool   // rel is ".": the parent's directory, through the parent's handles
	life   *lifecycle

	mu       sync.Mutex
	root     *os.Root
	hostReal string // symlink-free host path of the directory
	untrack  func()
	closed   bool

	// dir is the same directory as root, opened from it, for the fast
	// paths of internal/beneath (os.Root does not expose its descriptor);
	// opened on first use.
	dir        *os.File
	untrackDir func()
	dirFailed  bool
}

// dirFile returns the jail's directory as an open file, or nil when it is
// not open and cannot be (the caller then uses root alone).
func (j *jail) dirFile() *os.File {
	if j.alias {
		if j.isClosed() {
			return nil
		}
		return j.parent.dirFile()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.dir != nil || j.dirFailed || j.root == nil {
		return j.dir
	}
	d, err := j.root.Open(".")
	if err != nil {
		j.dirFailed = true
		return nil
	}
	j.dir, j.untrackDir = d, j.life.track(d)
	return d
}

// openRootJail opens the workspace root itself.
func openRootJail(hostDir string, life *lifecycle) (*jail, error) {
	real, err := evalDir(hostDir)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, err
	}
	life.track(r)
	return &jail{root: r, hostReal: real, life: life}, nil
}

// sub returns the jail of directory rel (clean, relative) below j: an alias
// of j when rel is ".", so that closing it leaves j open.
func (j *jail) sub(rel string) *jail {
	return &jail{parent: j, rel: rel, alias: rel == ".", life: j.life}
}

func (j *jail) isClosed() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.closed
}

// get returns the open root, opening it first if needed. A scope directory
// that does not exist yet yields an fs.ErrNotExist error and is retried on
// the next call.
func (j *jail) get() (*os.Root, string, error) {
	if j.alias {
		if j.isClosed() {
			return nil, "", ErrDestroyed
		}
		return j.parent.get()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.root != nil {
		return j.root, j.hostReal, nil
	}
	if j.closed {
		return nil, "", ErrDestroyed
	}
	pr, phost, err := j.parent.get()
	if err != nil {
		return nil, "", err
	}
	r, err := wspath.OpenNoFollow(pr, j.rel)
	if err != nil {
		return nil, "", err
	}
	j.root, j.hostReal = r, wspath.Join(phost, j.rel)
	j.untrack = j.life.track(r)
	return r, j.hostReal, nil
}

// ErrScopeLink is wrapped by the error of a scope whose path goes through a
// symbolic link: a scope root is reached without following any link, since
// whoever can write the parent directory (another tenant, or the scope's
// own user one level up) could otherwise point it at a sibling's files.
var ErrScopeLink = wspath.ErrLink

// close releases the root of a scope's jail early (when the scope is
// destroyed, not the backend); later calls of get fail with ErrDestroyed.
// It closes only handles the jail opened itself: an alias's belong to its
// parent, the workspace root's to the backend's lifecycle.
func (j *jail) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.parent == nil {
		return
	}
	j.closed = true
	if j.alias {
		return
	}
	if j.root != nil {
		_ = j.root.Close()
		j.untrack()
		j.root = nil
	}
	if j.dir != nil {
		_ = j.dir.Close()
		j.untrackDir()
		j.dir = nil
	}
}

func evalDir(dir string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", &fs.PathError{Op: "open", Path: dir, Err: syscall.ENOTDIR}
	}
	return real, nil
}

// isRootEscape reports whether err is os.Root refusing a link that it
// considers to leave the root (every absolute link does, even one pointing
// inside; those are retried through wspath.RealPath).
func isRootEscape(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}

// follow retries op on the link-free path of rel after os.Root refused a
// link: absolute links that point inside the workspace work, the others
// yield ErrPathEscape.
func follow[T any](r *os.Root, host, rel string, op func(string) (T, error)) (T, error) {
	v, err := op(rel)
	if err == nil || !isRootEscape(err) {
		return v, err
	}
	real, rerr := wspath.RealPath(r, host, rel)
	if rerr != nil {
		var zero T
		return zero, rerr
	}
	return op(real)
}

// atomicFile writes to a temporary sibling and renames it over the target
// (or exchanges the two, see replace.ByExchange) on Close; until then the target
// keeps its previous content.
type atomicFile struct {
	ctx     context.Context
	root    *os.Root
	f       *os.File
	tmp     string
	target  string
	mode    fs.FileMode
	keep    bool // chmod the result to mode (the replaced file's bits)
	ownRoot bool // root was opened for this file (the target's parent): closed with it

	// Set by Local.Create: wrap turns errors into *Error values, done logs
	// the outcome, untrack ends the destroy-time registration.
	wrap    func(error) error
	done    func(error)
	untrack func()

	mu        sync.Mutex
	closed    bool
	destroyed atomic.Bool // aborted by the backend's Destroy
}

// createAtomic prepares an atomic replacement of rel: it follows a final
// symbolic link inside the workspace (so writing through a link replaces the
// target, as the MCP filesystem server does), keeps the old mode bits, and
// creates missing parent directories.
func createAtomic(ctx context.Context, r *os.Root, host, rel string) (*atomicFile, error) {
	if rel == "." {
		return nil, &fs.PathError{Op: "write", Path: ".", Err: syscall.EISDIR}
	}
	if a := createInParent(ctx, r, rel, true); a != nil {
		return a, nil
	}
	target := rel
	mode, keep := fs.FileMode(0o644), false
	if fi, err := r.Lstat(rel); err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			real, err := wspath.RealPath(r, host, rel)
			if err != nil {
				return nil, err
			}
			target = real
			fi, err = r.Stat(real)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
		if fi != nil && fi.Mode().IsRegular() {
			mode, keep = fi.Mode().Perm(), true
		} else if fi != nil && fi.IsDir() {
			return nil, &fs.PathError{Op: "write", Path: rel, Err: syscall.EISDIR}
		}
	}
	f, tmp, err := openTemp(r, target, mode)
	if errors.Is(err, fs.ErrNotExist) {
		if merr := r.MkdirAll(path.Dir(target), 0o755); merr != nil {
			return nil, merr
		}
		f, tmp, err = openTemp(r, target, mode)
	}
	if err != nil {
		return nil, err
	}
	return &atomicFile{ctx: ctx, root: r, f: f, tmp: tmp, target: target, mode: mode, keep: keep}, nil
}

// createInParent is createAtomic's common case, done inside the parent
// directory opened once as a root of its own (or r itself for a name at
// the top): every os.Root operation on a path walks it (an openat and a
// close per directory on the way), and an atomic replacement makes four of
// them. It returns nil, having changed nothing, when the case is not the
// common one: a missing parent, a final link, anything but a regular file
// at rel, or nothing at rel when create is false. createAtomic then does
// the general work.
func createInParent(ctx context.Context, r *os.Root, rel string, create bool) *atomicFile {
	dir, base := path.Split(rel)
	pr, own := r, false
	if dir != "" {
		var err error
		if pr, err = r.OpenRoot(strings.TrimSuffix(dir, "/")); err != nil {
			return nil
		}
		own = true
	}
	closeOwn := func() {
		if own {
			pr.Close()
		}
	}
	mode, keep := fs.FileMode(0o644), false
	if fi, err := pr.Lstat(base); err == nil {
		if !fi.Mode().IsRegular() {
			closeOwn()
			return nil
		}
		mode, keep = fi.Mode().Perm(), true
	} else if !create || !errors.Is(err, fs.ErrNotExist) {
		closeOwn()
		return nil
	}
	f, tmp, err := openTemp(pr, base, mode)
	if err != nil {
		closeOwn()
		return nil
	}
	return &atomicFile{ctx: ctx, root: pr, ownRoot: own, f: f, tmp: tmp, target: base,
		mode: mode, keep: keep}
}

// openTemp creates a new temporary sibling of target (see beneath.TempName),
// trying another name if one exists already.
func openTemp(r *os.Root, target string, mode fs.FileMode) (f *os.File, tmp string, err error) {
	for try := 0; try < 3; try++ {
		tmp = beneath.TempName(target)
		f, err = r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|beneath.NoWait, mode)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	return f, tmp, err
}

func (a *atomicFile) Write(p []byte) (int, error) {
	n, err := a.f.Write(p)
	return n, a.destroyedErr(err)
}

// ReadFrom lets io.Copy use copy_file_range/splice when the source allows.
func (a *atomicFile) ReadFrom(r io.Reader) (int64, error) {
	n, err := a.f.ReadFrom(r)
	return n, a.destroyedErr(err)
}

// destroyedErr turns the error of an operation on a writer that Destroy
// aborted into ErrDestroyed (wrapped like every error of the writer).
func (a *atomicFile) destroyedErr(err error) error {
	if err == nil || !a.destroyed.Load() {
		return err
	}
	if a.wrap != nil {
		return a.wrap(ErrDestroyed)
	}
	return ErrDestroyed
}

// Close commits the content, unless the context was cancelled or a write
// failed, in which case the temporary file is removed and the target is left
// as it was.
func (a *atomicFile) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		if a.destroyed.Load() {
			return a.destroyedErr(fs.ErrClosed)
		}
		return fs.ErrClosed
	}
	a.closed = true
	if a.untrack != nil {
		a.untrack()
	}
	var err error
	if a.keep {
		err = a.f.Chmod(a.mode)
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil && a.ctx != nil {
		err = a.ctx.Err()
	}
	if err == nil && !(a.keep && replace.InRoot(a.root, a.tmp, a.target)) {
		err = a.root.Rename(a.tmp, a.target)
	}
	if err != nil {
		_ = a.root.Remove(a.tmp)
	}
	a.release()
	if a.wrap != nil {
		err = a.wrap(err)
	}
	if a.done != nil {
		a.done(err)
	}
	return err
}

// abort discards the temporary file; it is also what Destroy does to a
// writer still open, before the workspace root is closed.
func (a *atomicFile) abort() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		a.closed = true
		if a.untrack != nil {
			a.untrack()
		}
		_ = a.f.Close()
		_ = a.root.Remove(a.tmp)
		a.release()
	}
}

// release closes a root opened for this file.
func (a *atomicFile) release() {
	if a.ownRoot {
		_ = a.root.Close()
	}
}

// abortOnDestroy adapts an open writer to the destroy-time closers.
type abortOnDestroy struct{ a *atomicFile }

func (c abortOnDestroy) Close() error {
	c.a.destroyed.Store(true)
	c.a.abort()
	return nil
}
