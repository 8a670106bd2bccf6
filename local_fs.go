package agentbe

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentbe/agent-backend/internal/beneath"
	"github.com/agentbe/agent-backend/internal/wspath"
)

// at resolves p for op and returns the jail root, its host path and the
// clean relative path. Errors are *Error values naming p as given.
func (l *Local) at(ctx context.Context, op, p string) (*os.Root, string, string, error) {
	if err := l.alive(op, p); err != nil {
		return nil, "", "", err
	}
	if err := ctx.Err(); err != nil {
		return nil, "", "", l.fail(op, p, err)
	}
	rel, err := wspath.Resolve(l.rootDir, p)
	if err != nil {
		return nil, "", "", l.fail(op, p, err)
	}
	r, host, err := l.jail.get()
	if err != nil {
		return nil, "", "", l.fail(op, p, err)
	}
	return r, host, rel, nil
}

// fail wraps err for op on p, picking the code from the error and the op.
func (l *Local) fail(op, p string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	code := opCode(op)
	switch {
	case errors.Is(err, ErrPathEscape):
		code = CodePathEscape
	case errors.Is(err, ErrDestroyed):
		code = CodeDestroyed
	}
	return &Error{Code: code, Op: op, Path: p, Backend: KindLocal, Err: scrubPath(err, p)}
}

// scrubPath replaces the path inside an *fs.PathError (relative to some jail
// root) by the path as the caller gave it, so no message depends on where a
// jail was opened.
func scrubPath(err error, p string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: p, Err: pe.Err}
	}
	return err
}

func opCode(op string) ErrorCode {
	switch op {
	case "read", "open", "stat", "lstat", "exists", "realpath", "grep", "watch":
		return CodeReadFailed
	case "readdir":
		return CodeLsFailed
	case "exec":
		return CodeExecError // the command could not be prepared or started
	}
	return CodeWriteFailed
}

// Read returns the content of the file p. A file larger than MaxReadBytes
// fails with an error wrapping ErrTooLarge before anything is allocated for
// it (Open streams files of any size); anything but a regular file fails
// with ErrNotRegular.
func (l *Local) Read(ctx context.Context, p string) ([]byte, error) {
	done := l.log.begin(ctx, "read", p)
	data, err := l.read(ctx, p)
	done(err)
	return data, err
}

func (l *Local) read(ctx context.Context, p string) ([]byte, error) {
	r, host, rel, err := l.at(ctx, "read", p)
	if err != nil {
		return nil, err
	}
	if data, ok := beneath.ReadFile(l.jail.dirFile(), rel, effectiveReadLimit(l.cfg.MaxReadBytes)); ok {
		return data, nil
	}
	f, fi, _, err := l.openResolved("read", p, r, host, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(-1)
	if fi.Mode().IsRegular() {
		size = fi.Size()
	}
	buf, err := readAllLimited(f, size, effectiveReadLimit(l.cfg.MaxReadBytes))
	if err != nil {
		return nil, l.fail("read", p, err)
	}
	return buf, nil
}

// MaxReadBytes reports the limit of Read (and of the MCP tools that read a
// whole file): LocalConfig.MaxReadBytes, or DefaultMaxReadBytes.
func (l *Local) MaxReadBytes() int64 { return effectiveReadLimit(l.cfg.MaxReadBytes) }

// Open streams the content of the file p. Only regular files can be read
// (Read and Open fail with an error wrapping ErrNotRegular on a FIFO, a
// device or a socket, which could block or never end); Open has no size
// limit.
func (l *Local) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	done := l.log.begin(ctx, "open", p)
	f, fi, err := l.open(ctx, "open", p)
	done(err)
	if err != nil {
		return nil, err
	}
	return l.trackReader(f, fi, p), nil
}

func (l *Local) open(ctx context.Context, op, p string) (*os.File, fs.FileInfo, error) {
	f, fi, _, _, err := l.openIn(ctx, op, p)
	return f, fi, err
}

// openIn opens p for reading (a regular file or a directory, see
// checkReadable) and also returns what fstat says of it, the root and the
// path within it that were opened.
func (l *Local) openIn(ctx context.Context, op, p string) (*os.File, fs.FileInfo, *os.Root, string, error) {
	r, host, rel, err := l.at(ctx, op, p)
	if err != nil {
		return nil, nil, nil, "", err
	}
	f, fi, rel, err := l.openResolved(op, p, r, host, rel)
	return f, fi, r, rel, err
}

// openResolved is openIn once l.at has resolved p to rel in r; it returns
// the path within r that was opened (a link followed changes it).
func (l *Local) openResolved(op, p string, r *os.Root, host, rel string) (*os.File, fs.FileInfo, string, error) {
	f, ok := beneath.Open(l.jail.dirFile(), r.Name()+"/"+rel, rel, os.O_RDONLY|beneath.NoWait)
	if !ok {
		var err error
		f, err = follow(r, host, rel, func(try string) (*os.File, error) {
			rel = try
			return r.OpenFile(try, os.O_RDONLY|beneath.NoWait, 0)
		})
		if err != nil {
			return nil, nil, "", l.fail(op, p, err)
		}
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkReadable(fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, "", l.fail(op, p, err)
	}
	return f, fi, rel, nil
}

// Write replaces the file p with data atomically (temporary file + rename),
// creating parent directories. An existing file keeps its mode bits; writing
// through a symbolic link inside the workspace replaces the link's target.
// Durability across a crash is not promised (no fsync): a file replaced
// shortly before an operating-system crash may come back empty (see
// internal/replace for why ext4's rename heuristic is not relied on).
func (l *Local) Write(ctx context.Context, p string, data []byte) error {
	done := l.log.begin(ctx, "write", p)
	err := l.write(ctx, p, data)
	done(err)
	return err
}

func (l *Local) write(ctx context.Context, p string, data []byte) error {
	r, host, rel, err := l.at(ctx, "write", p)
	if err != nil {
		return err
	}
	if rel != "." {
		if ok, err := beneath.Write(ctx, l.jail.dirFile(), rel, data, true); ok {
			return l.fail("write", p, err)
		}
	}
	a, err := createAtomic(ctx, r, host, rel)
	if err != nil {
		return l.fail("write", p, err)
	}
	return l.commit(p, a, data)
}

// commit writes data to a and replaces p with it.
func (l *Local) commit(p string, a *atomicFile, data []byte) error {
	if _, err := a.Write(data); err != nil {
		a.abort()
		return l.fail("write", p, err)
	}
	return l.fail("write", p, a.Close())
}

// Create returns a writer that replaces the file p atomically when Close
// returns nil; see Write. If ctx is done before Close, Close discards the
// content and returns ctx's error.
func (l *Local) Create(ctx context.Context, p string) (io.WriteCloser, error) {
	done := l.log.begin(ctx, "create", p)
	a, err := l.create(ctx, "create", p)
	if err != nil {
		done(err)
		return nil, err
	}
	a.wrap = func(err error) error { return l.fail("create", p, err) }
	a.done = done
	a.untrack = l.life.track(abortOnDestroy{a})
	return a, nil
}

func (l *Local) create(ctx context.Context, op, p string) (*atomicFile, error) {
	r, host, rel, err := l.at(ctx, op, p)
	if err != nil {
		return nil, err
	}
	a, err := createAtomic(ctx, r, host, rel)
	if err != nil {
		return nil, l.fail(op, p, err)
	}
	return a, nil
}

// ReadDir returns the sorted names in directory p.
func (l *Local) ReadDir(ctx context.Context, p string) ([]string, error) {
	done := l.log.begin(ctx, "readdir", p)
	names, err := l.readDir(ctx, p)
	done(err)
	return names, err
}

func (l *Local) readDir(ctx context.Context, p string) ([]string, error) {
	f, _, err := l.open(ctx, "readdir", p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, l.fail("readdir", p, err)
	}
	sort.Strings(names)
	return names, nil
}

// Mkdir creates directory p and any missing parents (mode 0755).
func (l *Local) Mkdir(ctx context.Context, p string) error {
	done := l.log.begin(ctx, "mkdir", p)
	err := l.mkdir(ctx, p)
	done(err)
	return err
}

func (l *Local) mkdir(ctx context.Context, p string) error {
	r, host, rel, err := l.at(ctx, "mkdir", p)
	if err != nil {
		return err
	}
	if rel == "." {
		return nil
	}
	_, err = follow(r, host, rel, func(rel string) (struct{}, error) {
		return struct{}{}, r.MkdirAll(rel, 0o755)
	})
	return l.fail("mkdir", p, err)
}

// Exists reports whether p exists (following links). A dangling link does
// not exist; a link leading outside the workspace is an error.
func (l *Local) Exists(ctx context.Context, p string) (bool, error) {
	done := l.log.begin(ctx, "exists", p)
	_, err := l.stat(ctx, "exists", p)
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		err = nil
		done(nil)
		return false, nil
	}
	done(err)
	return err == nil, err
}

// Stat describes p, following links.
func (l *Local) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	done := l.log.begin(ctx, "stat", p)
	fi, err := l.stat(ctx, "stat", p)
	done(err)
	return fi, err
}

func (l *Local) stat(ctx context.Context, op, p string) (fs.FileInfo, error) {
	r, host, rel, err := l.at(ctx, op, p)
	if err != nil {
		return nil, err
	}
	fi, err := follow(r, host, rel, r.Stat)
	if err != nil {
		return nil, l.fail(op, p, err)
	}
	return fi, nil
}

// Lstat describes p without following a final link.
func (l *Local) Lstat(ctx context.Context, p string) (fs.FileInfo, error) {
	done := l.log.begin(ctx, "lstat", p)
	fi, err := l.lstat(ctx, p)
	done(err)
	return fi, err
}

func (l *Local) lstat(ctx context.Context, p string) (fs.FileInfo, error) {
	r, host, rel, err := l.at(ctx, "lstat", p)
	if err != nil {
		return nil, err
	}
	fi, err := follow(r, host, rel, r.Lstat)
	if err != nil {
		return nil, l.fail("lstat", p, err)
	}
	return fi, nil
}

// Remove deletes p. With Recursive a directory is removed with its content
// (links inside are removed, never followed); with Force a missing p is not
// an error. The workspace root itself cannot be removed.
func (l *Local) Remove(ctx context.Context, p string, opts RemoveOptions) error {
	done := l.log.begin(ctx, "remove", p)
	err := l.remove(ctx, p, opts)
	done(err)
	return err
}

func (l *Local) remove(ctx context.Context, p string, opts RemoveOptions) error {
	r, _, rel, err := l.at(ctx, "remove", p)
	if err != nil {
		return err
	}
	if rel == "." {
		return l.fail("remove", p, &fs.PathError{Op: "remove", Path: p, Err: syscall.EBUSY})
	}
	if opts.Recursive {
		if _, err := r.Lstat(rel); err != nil {
			if opts.Force && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return l.fail("remove", p, err)
		}
		err = r.RemoveAll(rel)
	} else {
		err = r.Remove(rel)
	}
	if err != nil && opts.Force && errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return l.fail("remove", p, err)
}

// Rename moves oldPath to newPath, creating newPath's parent directories.
// Neither may be the workspace root.
func (l *Local) Rename(ctx context.Context, oldPath, newPath string) error {
	done := l.log.begin2(ctx, "rename", oldPath, newPath)
	err := l.rename(ctx, oldPath, newPath)
	done(err)
	return err
}

func (l *Local) rename(ctx context.Context, oldPath, newPath string) error {
	r, _, from, err := l.at(ctx, "rename", oldPath)
	if err != nil {
		return err
	}
	to, err := wspath.Resolve(l.rootDir, newPath)
	if err != nil {
		return l.fail("rename", newPath, err)
	}
	if from == "." || to == "." {
		return l.fail("rename", oldPath, &fs.PathError{Op: "rename", Path: oldPath, Err: syscall.EBUSY})
	}
	err = r.Rename(from, to)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := r.Lstat(from); serr == nil {
			if merr := r.MkdirAll(path.Dir(to), 0o755); merr != nil {
				return l.fail("rename", newPath, merr)
			}
			err = r.Rename(from, to)
		}
	}
	return l.fail("rename", oldPath, err)
}

// Touch creates an empty file p if it does not exist (parents included) and
// otherwise only sets its modification time to now, as touch(1) does; it
// never truncates.
func (l *Local) Touch(ctx context.Context, p string) error {
	done := l.log.begin(ctx, "touch", p)
	err := l.touch(ctx, p)
	done(err)
	return err
}

func (l *Local) touch(ctx context.Context, p string) error {
	r, host, rel, err := l.at(ctx, "touch", p)
	if err != nil {
		return err
	}
	openIt := func(rel string) (*os.File, error) {
		return r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|beneath.NoWait, 0o644)
	}
	f, err := follow(r, host, rel, openIt)
	if errors.Is(err, fs.ErrNotExist) && rel != "." {
		if merr := r.MkdirAll(path.Dir(rel), 0o755); merr != nil {
			return l.fail("touch", p, merr)
		}
		f, err = follow(r, host, rel, openIt)
	}
	if err != nil {
		return l.fail("touch", p, err)
	}
	if err := f.Close(); err != nil {
		return l.fail("touch", p, err)
	}
	now := time.Now()
	_, err = follow(r, host, rel, func(rel string) (struct{}, error) {
		return struct{}{}, r.Chtimes(rel, now, now)
	})
	return l.fail("touch", p, err)
}

// RealPath resolves links inside the workspace and returns the absolute path
// under RootDir that p names.
//
// For a scope whose directory does not exist yet, nothing below it can be a
// link, so the lexical path is returned.
func (l *Local) RealPath(ctx context.Context, p string) (string, error) {
	done := l.log.begin(ctx, "realpath", p)
	real, err := l.realPath(ctx, p)
	done(err)
	return real, err
}

func (l *Local) realPath(ctx context.Context, p string) (string, error) {
	if err := l.alive("realpath", p); err != nil {
		return "", err
	}
	rel, err := wspath.Resolve(l.rootDir, p)
	if err != nil {
		return "", l.fail("realpath", p, err)
	}
	r, host, err := l.jail.get()
	if err != nil {
		if l.view && errors.Is(err, fs.ErrNotExist) {
			return wspath.Join(l.rootDir, rel), nil
		}
		return "", l.fail("realpath", p, err)
	}
	real, err := wspath.RealPath(r, host, rel)
	if err != nil {
		return "", l.fail("realpath", p, err)
	}
	return wspath.Join(l.rootDir, real), nil
}

// ensureDir creates directory rel without logging it (a scope's root).
func (l *Local) ensureDir(ctx context.Context, rel string) error {
	r, _, err := l.jail.get()
	if err == nil {
		var d *os.Root
		if d, err = wspath.MkdirNoFollow(r, rel, 0o755); err == nil {
			d.Close()
		}
	}
	return l.fail("mkdir", rel, err)
}

// localReader is a file returned by Local.Open: tracked by the backend, so
// that Destroy closes it and its later reads fail with ErrDestroyed (an
// *Error of code DESTROYED) instead of going on reading the workspace.
// It keeps *os.File's io.Copy fast path (WriteTo), ReadAt, Seek and Stat.
type localReader struct {
	f         *os.File
	fi        fs.FileInfo // fstat at open time
	l         *Local
	p         string
	untrack   func()
	destroyed atomic.Bool
}

func (l *Local) trackReader(f *os.File, fi fs.FileInfo, p string) *localReader {
	r := &localReader{f: f, fi: fi, l: l, p: p}
	r.untrack = l.life.track(readerCloser{r})
	return r
}

// readerCloser is what Destroy closes.
type readerCloser struct{ r *localReader }

func (c readerCloser) Close() error {
	c.r.destroyed.Store(true)
	return c.r.f.Close()
}

func (r *localReader) wrap(err error) error {
	if err == nil || err == io.EOF || !r.destroyed.Load() {
		return err
	}
	return &Error{Code: CodeDestroyed, Op: "open", Path: r.p, Backend: KindLocal, Err: ErrDestroyed}
}

func (r *localReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	return n, r.wrap(err)
}

func (r *localReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.f.ReadAt(p, off)
	return n, r.wrap(err)
}

func (r *localReader) Seek(offset int64, whence int) (int64, error) {
	n, err := r.f.Seek(offset, whence)
	return n, r.wrap(err)
}

// WriteTo lets io.Copy use sendfile/splice from the file.
func (r *localReader) WriteTo(w io.Writer) (int64, error) {
	n, err := r.f.WriteTo(w)
	return n, r.wrap(err)
}

// SyscallConn gives the open file's descriptor, so that copying the file
// to a TCP connection (an http.ResponseWriter over one included) uses
// sendfile. After Destroy it fails with ErrDestroyed, and the copy falls
// back to Read, which fails the same way; a transfer already inside one
// sendfile call runs to its end, so a caller that must stop promptly
// copies in chunks (io.CopyN).
func (r *localReader) SyscallConn() (syscall.RawConn, error) {
	if r.destroyed.Load() {
		return nil, r.wrap(fs.ErrClosed)
	}
	return r.f.SyscallConn()
}

// Stat describes the open file.
func (r *localReader) Stat() (fs.FileInfo, error) {
	fi, err := r.f.Stat()
	return fi, r.wrap(err)
}

// OpenInfo is what fstat said of the file when it was opened (Open checks
// it is a regular file or a directory), for callers that size a buffer
// and need no fresher answer than Stat's.
func (r *localReader) OpenInfo() fs.FileInfo { return r.fi }

// Close closes the file and untracks it.
func (r *localReader) Close() error {
	r.untrack()
	return r.wrap(r.f.Close())
}
