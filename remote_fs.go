package agentbe

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"sync"

	"github.com/agentbe/agent-backend/internal/beneath"
	"github.com/agentbe/agent-backend/internal/wspath"
	"github.com/agentbe/agent-backend/sftpjail"
)

// File operations of a Remote, all over its SFTP session: no shell command
// is ever built from a path. Paths follow the workspace conventions and are
// sent as absolute paths under RootDir.

// linkOp resolves p, connects if needed and runs fn with the link and the
// remote path, under OperationTimeout; errors become *Error values.
func (r *Remote) linkOp(ctx context.Context, op, p string, fn func(ctx context.Context, l *remoteLink, rp string) error) error {
	rp, err := r.remotePath(op, p)
	if err != nil {
		return err
	}
	ctx, cancel := r.core.opCtx(ctx)
	defer cancel()
	l, err := r.core.ensure(ctx, op)
	if err != nil {
		return fillError(err, p, "")
	}
	return r.fail(op, p, l, fn(ctx, l, rp))
}

// sftpOp is linkOp for fn that needs only an SFTP client: the session of
// this Remote (see sftpFor), held while fn runs.
func (r *Remote) sftpOp(ctx context.Context, op, p string, fn func(ctx context.Context, c *sftpjail.Client, rp string) error) error {
	return r.sftpOpHeld(ctx, op, p, func(ctx context.Context, c *sftpjail.Client, rp string, hold func() func()) error {
		return fn(ctx, c, rp)
	})
}

// sftpOpHeld is sftpOp for fn whose result keeps using the session after
// it returns (a reader, a writer): hold returns the release that its Close
// calls instead.
func (r *Remote) sftpOpHeld(ctx context.Context, op, p string, fn func(ctx context.Context, c *sftpjail.Client, rp string, hold func() func()) error) error {
	return r.linkOp(ctx, op, p, func(ctx context.Context, l *remoteLink, rp string) error {
		c, _, release, err := r.sftpFor(ctx, l)
		if err != nil {
			return err
		}
		held := false
		defer func() {
			if !held {
				release()
			}
		}()
		return fn(ctx, c, rp, func() func() { held = true; return release })
	})
}

// fail wraps the error of an operation on link l: DESTROYED after Destroy,
// CONNECTION_CLOSED when the link went down, else as wrapErr does. A
// failure of the SFTP stream has already been recorded as the link's loss
// (see sessionStream), so the status no longer says connected.
func (r *Remote) fail(op, p string, l *remoteLink, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	select {
	case <-l.lost:
		if r.core.alive(op, p) != nil {
			return &Error{Code: CodeDestroyed, Op: op, Path: p, Backend: KindRemote, Err: ErrDestroyed}
		}
		return connClosed(op, p, err)
	default:
	}
	return r.wrapErr(op, p, err)
}

// MaxReadBytes is the limit of Read.
func (r *Remote) MaxReadBytes() int64 { return effectiveReadLimit(r.core.cfg.MaxReadBytes) }

// Read returns the content of the file p, up to MaxReadBytes (a larger file
// fails with ErrTooLarge before anything is read; Open streams it).
//
// It costs two round trips: STAT and OPEN go out together, then the READs
// of exactly the size STAT gave, all in flight at once; the handle is closed
// without waiting for the reply. A file that grows meanwhile is read as it
// was; one that shrinks, up to its end.
func (r *Remote) Read(ctx context.Context, p string) (data []byte, err error) {
	done := r.logBegin(ctx, "read", p)
	err = r.sftpOp(ctx, "read", p, func(ctx context.Context, c *sftpjail.Client, rp string) error {
		var fi fs.FileInfo
		var statErr error
		stat := make(chan struct{})
		go func() {
			defer close(stat)
			fi, statErr = c.Stat(ctx, rp)
		}()
		f, err := c.Open(ctx, rp)
		<-stat
		if err != nil {
			return err
		}
		defer func() { go f.Close() }()
		if statErr != nil {
			return statErr
		}
		if err := checkReadable(fi); err != nil {
			return err
		}
		if fi.IsDir() {
			return &fs.PathError{Op: "read", Path: p, Err: errIsDir}
		}
		size, limit := fi.Size(), r.MaxReadBytes()
		if size > limit {
			return &tooLargeError{size: size, limit: limit}
		}
		buf := make([]byte, size)
		n, err := f.ReadAt(buf, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		data = buf[:n]
		return nil
	})
	done(err)
	return data, err
}

// Write replaces the file p atomically: the content goes to a temporary
// sibling that is renamed over p (posix-rename) once complete, so readers
// see the old or the new content, never a part. Missing parents are
// created. A new file gets mode 0644 (before the daemon's umask); a
// replaced one keeps its permission bits.
func (r *Remote) Write(ctx context.Context, p string, data []byte) error {
	done := r.logBegin(ctx, "write", p)
	err := r.sftpOp(ctx, "write", p, func(ctx context.Context, c *sftpjail.Client, rp string) error {
		w, err := remoteCreate(ctx, r.core, c, rp)
		if err != nil {
			return err
		}
		if _, err := w.f.Write(data); err != nil {
			w.abort()
			return err
		}
		return w.commit()
	})
	done(err)
	return err
}

// Open streams the file p (many reads in flight; see sftpjail.File).
func (r *Remote) Open(ctx context.Context, p string) (rc io.ReadCloser, err error) {
	done := r.logBegin(ctx, "open", p)
	err = r.sftpOpHeld(ctx, "open", p, func(_ context.Context, c *sftpjail.Client, rp string, hold func() func()) error {
		// The file outlives this call: its context is the caller's, not the
		// operation timeout's.
		f, err := c.Open(ctx, rp)
		if err != nil {
			return err
		}
		rc = &remoteReader{f: f, wrap: func(err error) error { return r.wrapErr("open", p, err) }, release: hold()}
		return nil
	})
	done(err)
	return rc, err
}

// remoteReader is a file opened by Remote.Open: its errors are *Error
// values (CONNECTION_CLOSED when the link went down), io.EOF aside.
type remoteReader struct {
	f       *sftpjail.File
	wrap    func(error) error
	release func() // of the SFTP session (idempotent)
}

func (r *remoteReader) wrapErr(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	return r.wrap(err)
}

func (r *remoteReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	return n, r.wrapErr(err)
}

// WriteTo keeps io.Copy on the pipelined path (many reads in flight).
func (r *remoteReader) WriteTo(w io.Writer) (int64, error) {
	n, err := r.f.WriteTo(w)
	return n, r.wrapErr(err)
}

func (r *remoteReader) Close() error {
	err := r.f.Close()
	r.release()
	return r.wrapErr(err)
}

// Create returns a writer whose content replaces p atomically when Close
// returns nil; cancelling ctx or a failed write abandons it and leaves p as
// it was.
func (r *Remote) Create(ctx context.Context, p string) (wc io.WriteCloser, err error) {
	done := r.logBegin(ctx, "create", p)
	err = r.sftpOpHeld(ctx, "create", p, func(_ context.Context, c *sftpjail.Client, rp string, hold func() func()) error {
		w, err := remoteCreate(ctx, r.core, c, rp)
		if err != nil {
			return err
		}
		w.release = hold()
		w.wrap = func(err error) error { return r.wrapErr("create", p, err) }
		w.done = done
		wc = w
		return nil
	})
	if err != nil {
		done(err)
	}
	return wc, err
}

// wrapErr turns err into an *Error for op on p: CONNECTION_CLOSED when the
// SFTP session ended, PATH_ESCAPE_ATTEMPT for an escape, else the code of
// op. Readers and writers use it directly, since they outlive the call
// that knew the link.
func (r *Remote) wrapErr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, sftpjail.ErrConnClosed) {
		return connClosed(op, p, err)
	}
	code := opCode(op)
	if errors.Is(err, ErrPathEscape) {
		code = CodePathEscape
	}
	return &Error{Code: code, Op: op, Path: p, Backend: KindRemote, Err: err}
}

// ReadDir lists the names in directory p, sorted.
func (r *Remote) ReadDir(ctx context.Context, p string) (names []string, err error) {
	done := r.logBegin(ctx, "readdir", p)
	err = r.sftpOp(ctx, "readdir", p, func(ctx context.Context, c *sftpjail.Client, rp string) error {
		infos, err := c.ReadDir(ctx, rp)
		if err != nil {
			return err
		}
		names = make([]string, len(infos))
		for i, fi := range infos {
			names[i] = fi.Name()
		}
		sort.Strings(names)
		return nil
	})
	done(err)
	return names, err
}

// Mkdir creates directory p and its parents.
func (r *Remote) Mkdir(ctx context.Context, p string) error {
	done := r.logBegin(ctx, "mkdir", p)
	err := r.mkdirAll(ctx, p)
	done(err)
	return err
}

// mkdirAll creates p and its parents (Mkdir without the log entry).
func (r *Remote) mkdirAll(ctx context.Context, p string) error {
	return r.sftpOp(ctx, "mkdir", p, func(ctx context.Context, c *sftpjail.Client, rp string) error {
		return c.MkdirAll(ctx, rp, 0o755)
	})
}

// Exists reports whether p exists.
func (r *Remote) Exists(ctx context.Context, p string) (ok bool, err error) {
	done := r.logBegin(ctx, "exists", p)
	err = r.sftpOp(ctx, "exists", p, func(ctx context.Context, c *sftpjail.Client, rp string) error {
		_, err := c.Stat(ctx, rp)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		ok = err == nil
		return err
	})
	done(err)
	return ok, err
}

// Stat describes p, following links.
func (r *Remote) Stat(ctx context.Context, p string) (fi fs.FileInfo, err error) {
	done := r.logBegin(ctx, "stat", p)
	err = r.sftpOp(ctx, "stat", p, func(ctx context.Context, c *sftpjail.Client, rp string) error {
		fi, err = c.Stat(ctx, rp)
		return err
	})
	done(err)
	return fi, err
}

// Lstat describes p without following a final link.
func (r *Remote) Lstat(ctx context.Context, p string) (fi fs.FileInfo, err error) {
	done := r.logBegin(ctx, "lstat", p)
	err = r.sftpOp(ctx, "lstat", p, func(ctx context.Context, c *sftpjail.Client, rp string) error {
		fi, err = c.Lstat(ctx, rp)
		return err
	})
	done(err)
	return fi, err
}

// Remove deletes p; see RemoveOptions. The workspace root itself cannot be
// removed.
func (r *Remote) Remove(ctx context.Context, p string, opts RemoveOptions) error {
	done := r.logBegin(ctx, "remove", p)
	err := r.sftpOp(ctx, "remove", p, func(ctx context.Context, c *sftpjail.Client, rp string) error {
		if rp == r.rootDir {
			return &fs.PathError{Op: "remove", Path: p, Err: fs.ErrPermission}
		}
		fi, err := c.Lstat(ctx, rp)
		switch {
		case errors.Is(err, fs.ErrNotExist) && opts.Force:
			return nil
		case err != nil:
			return err
		case fi.IsDir() && opts.Recursive:
			return c.RemoveAll(ctx, rp)
		case fi.IsDir():
			return c.RemoveDir(ctx, rp)
		}
		return c.Remove(ctx, rp)
	})
	done(err)
	return err
}

// Rename moves oldPath to newPath, replacing newPath if it exists.
func (r *Remote) Rename(ctx context.Context, oldPath, newPath string) error {
	done := r.core.logFor(r.view).begin2(ctx, "rename", oldPath, newPath)
	rn, err := r.remotePath("rename", newPath)
	if err == nil {
		err = r.sftpOp(ctx, "rename", oldPath, func(ctx context.Context, c *sftpjail.Client, ro string) error {
			return c.Rename(ctx, ro, rn)
		})
	}
	done(err)
	return err
}

// Touch creates p (and its parents) if it does not exist; it never
// truncates.
func (r *Remote) Touch(ctx context.Context, p string) error {
	done := r.logBegin(ctx, "touch", p)
	err := r.sftpOp(ctx, "touch", p, func(ctx context.Context, c *sftpjail.Client, rp string) error {
		f, err := c.OpenFile(ctx, rp, os.O_WRONLY|os.O_CREATE, 0o644)
		if errors.Is(err, fs.ErrNotExist) {
			if err := c.MkdirAll(ctx, path.Dir(rp), 0o755); err != nil {
				return err
			}
			f, err = c.OpenFile(ctx, rp, os.O_WRONLY|os.O_CREATE, 0o644)
		}
		if err != nil {
			return err
		}
		return f.Close()
	})
	done(err)
	return err
}

// RealPath asks the daemon to resolve p and refuses an answer outside the
// workspace (a link leading out). Daemons present paths differently (ours
// from "/" of its workspace, OpenSSH's and the reference's as host paths),
// so the answer is mapped through how the daemon presented RootDir when the
// connection was made.
func (r *Remote) RealPath(ctx context.Context, p string) (real string, err error) {
	done := r.logBegin(ctx, "realpath", p)
	err = r.linkOp(ctx, "realpath", p, func(ctx context.Context, l *remoteLink, rp string) error {
		c, presented, release, err := r.sftpFor(ctx, l)
		if err != nil {
			return err
		}
		defer release()
		got, err := c.RealPath(ctx, rp)
		if err != nil {
			return err
		}
		var ok bool
		if real, ok = r.fromPresented(presented, got); !ok {
			real = ""
			return ErrPathEscape
		}
		return nil
	})
	done(err)
	return real, err
}

// fromPresented maps a path as the daemon presents it back to a path under
// this backend's RootDir, which the daemon presents as presented; false
// when it lies outside.
func (r *Remote) fromPresented(presented, got string) (string, bool) {
	if !inside(got, presented) {
		return "", false
	}
	sub, err := wspath.Resolve(presented, got)
	if err != nil {
		return "", false
	}
	return wspath.Join(r.rootDir, sub), true
}

// remoteWriter is an atomic replacement in progress on the daemon.
type remoteWriter struct {
	ctx    context.Context
	core   *remoteCore
	c      *sftpjail.Client
	f      *sftpjail.File
	tmp    string
	target string
	mode   fs.FileMode // of the replaced file, 0 if new
	wrap   func(error) error
	done   func(error)
	// release lets go of the SFTP session once the writer is finished
	// (nil while remoteCreate runs).
	release func()

	mu     sync.Mutex
	closed bool
}

// remoteCreate opens a temporary sibling of rp (O_EXCL, so nothing planted
// there is followed), creating the parents when missing. A temporary file
// that may exist and could not be removed is left to core to remove on the
// next connection (see remoteCore.leftBehind).
func remoteCreate(ctx context.Context, core *remoteCore, c *sftpjail.Client, rp string) (*remoteWriter, error) {
	tmp := beneath.TempName(rp)
	// The target's STAT (for its mode) goes out with the OPEN of the
	// temporary file: one round trip for both.
	var target fs.FileInfo
	stat := make(chan struct{})
	go func() {
		defer close(stat)
		target, _ = c.Stat(ctx, rp)
	}()
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	f, err := c.OpenFile(ctx, tmp, flags, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err := c.MkdirAll(ctx, path.Dir(rp), 0o755); err != nil {
			<-stat
			return nil, err
		}
		f, err = c.OpenFile(ctx, tmp, flags, 0o644)
	}
	<-stat
	if err != nil {
		// The OPEN may have been carried out without its answer arriving.
		if errors.Is(err, sftpjail.ErrConnClosed) || ctx.Err() != nil {
			core.leftBehind(tmp)
		}
		return nil, err
	}
	w := &remoteWriter{ctx: ctx, core: core, c: c, f: f, tmp: tmp, target: rp}
	if target != nil {
		if target.IsDir() {
			w.abort()
			return nil, &fs.PathError{Op: "write", Path: rp, Err: errIsDir}
		}
		w.mode = target.Mode().Perm()
	}
	return w, nil
}

var errIsDir = errors.New("is a directory")

func (w *remoteWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil && w.wrap != nil {
		err = w.wrap(err)
	}
	return n, err
}

// ReadFrom keeps io.Copy on the pipelined path.
func (w *remoteWriter) ReadFrom(src io.Reader) (int64, error) {
	n, err := w.f.ReadFrom(src)
	if err != nil && w.wrap != nil {
		err = w.wrap(err)
	}
	return n, err
}

// commit closes the temporary file and renames it over the target.
func (w *remoteWriter) commit() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fs.ErrClosed
	}
	w.closed = true
	defer w.finished()
	err := w.f.Close()
	if err == nil {
		err = w.ctx.Err()
	}
	if err == nil && w.mode != 0 && w.mode != 0o644 {
		err = w.c.Chmod(w.ctx, w.tmp, w.mode)
	}
	if err == nil {
		err = w.c.Rename(w.ctx, w.tmp, w.target)
	}
	if err != nil {
		w.removeTemp()
	}
	return err
}

func (w *remoteWriter) abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		w.f.Close()
		w.removeTemp()
		w.finished()
	}
}

// finished releases the SFTP session; w.mu is held.
func (w *remoteWriter) finished() {
	if w.release != nil {
		w.release()
		w.release = nil
	}
}

// removeTemp removes the temporary file, or hands it to the core when it
// cannot (the link went down): a rename whose answer was lost may have
// happened, in which case the name is gone and removing it later finds
// nothing.
func (w *remoteWriter) removeTemp() {
	if err := w.c.Remove(context.WithoutCancel(w.ctx), w.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		w.core.leftBehind(w.tmp)
	}
}

// Close commits the content (see Remote.Create).
func (w *remoteWriter) Close() error {
	err := w.commit()
	if w.wrap != nil {
		err = w.wrap(err)
	}
	if w.done != nil {
		w.done(err)
	}
	return err
}

func (r *Remote) logBegin(ctx context.Context, op, p string) func(error) {
	return r.core.logFor(r.view).begin(ctx, op, p)
}

// logFor returns the operation log of the root (views log through their
// Scope instead).
func (c *remoteCore) logFor(view bool) opLog {
	if view {
		return opLog{}
	}
	return c.log
}
