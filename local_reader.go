package agentbe

import (
	"io"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"
)

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
