package sftpjail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
)

// File is an open remote file. ReadAt and WriteAt are safe for concurrent
// use; Read, Write and Seek share an offset, guarded by a mutex. Large
// reads and writes (and io.Copy through WriteTo / ReadFrom) keep up to
// MaxInFlight requests of ChunkSize bytes in flight.
//
// The context given to Open, Create or OpenFile bounds every operation of
// the file except Close: cancel it to abort transfers in progress.
type File struct {
	c      *Client
	ctx    context.Context
	name   string
	handle string

	mu     sync.Mutex
	off    int64
	closed bool
}

// Open opens p for reading.
func (c *Client) Open(ctx context.Context, p string) (*File, error) {
	return c.OpenFile(ctx, p, os.O_RDONLY, 0)
}

// Create creates or truncates p for writing, mode 0644 (before the
// server's umask) for a new file.
func (c *Client) Create(ctx context.Context, p string) (*File, error) {
	return c.OpenFile(ctx, p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
}

// OpenFile opens p with os.OpenFile-style flags (O_RDONLY, O_WRONLY,
// O_RDWR, O_APPEND, O_CREATE, O_TRUNC, O_EXCL) and perm for a new file.
func (c *Client) OpenFile(ctx context.Context, p string, flag int, perm fs.FileMode) (*File, error) {
	var pflags uint32
	switch flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR) {
	case os.O_WRONLY:
		pflags = flagWrite
	case os.O_RDWR:
		pflags = flagRead | flagWrite
	default:
		pflags = flagRead
	}
	for _, m := range [][2]int{{os.O_APPEND, flagAppend}, {os.O_CREATE, flagCreat}, {os.O_TRUNC, flagTrunc}, {os.O_EXCL, flagExcl}} {
		if flag&m[0] != 0 {
			pflags |= uint32(m[1])
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, pathErr("open", p, err)
	}
	cl, err := c.start(fxpOpen, func(b []byte) []byte {
		b = appendString(b, p)
		b = appendU32(b, pflags)
		if flag&os.O_CREATE != 0 {
			return appendAttrs(b, &Attrs{Flags: attrPermissions, Mode: uint32(perm.Perm())})
		}
		return appendAttrs(b, &Attrs{})
	})
	if err != nil {
		return nil, pathErr("open", p, err)
	}
	// A handle granted after ctx was cancelled is closed, not leaked.
	r, err := cl.wait(ctx, func(r reply) {
		if h, err := handleOf(&r); err == nil {
			c.closeHandle(h)
		}
	})
	if err != nil {
		return nil, pathErr("open", p, err)
	}
	h, err := handleOf(&r)
	r.release()
	if err != nil {
		return nil, pathErr("open", p, err)
	}
	return &File{c: c, ctx: ctx, name: p, handle: h}, nil
}

// Name returns the path the file was opened with.
func (f *File) Name() string { return f.name }

// Close closes the remote handle.
func (f *File) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return pathErr("close", f.name, fs.ErrClosed)
	}
	f.closed = true
	f.mu.Unlock()
	return f.c.closeHandle(f.handle)
}

// Stat returns the attributes of the open file (FSTAT).
func (f *File) Stat() (fs.FileInfo, error) {
	r, err := f.c.roundTrip(f.ctx, func(b []byte) []byte { return appendString(b, f.handle) }, fxpFstat)
	if err != nil {
		return nil, pathErr("stat", f.name, err)
	}
	defer r.release()
	if err := expect(&r, fxpAttrs); err != nil {
		return nil, pathErr("stat", f.name, err)
	}
	d := decoder{b: r.body}
	a := d.attrs()
	if !d.ok() {
		return nil, pathErr("stat", f.name, ErrBadPacket)
	}
	return &fileInfo{name: f.name, attrs: a}, nil
}

// startRead sends a READ of n bytes at off.
func (f *File) startRead(off int64, n int) (*call, error) {
	return f.c.start(fxpRead, func(b []byte) []byte {
		b = appendString(b, f.handle)
		b = appendU64(b, uint64(off))
		return appendU32(b, uint32(n))
	})
}

// readResult decodes a READ reply: the data (aliasing r's buffer), or
// io.EOF, or the error.
func readResult(r *reply) ([]byte, error) {
	if err := expect(r, fxpData); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, err
	}
	d := decoder{b: r.body}
	data := d.bytes()
	if !d.ok() {
		return nil, ErrBadPacket
	}
	return data, nil
}

// chunk is a byte range to transfer.
type chunk struct {
	off int64
	n   int
}

// pendingRead is a READ in flight.
type pendingRead struct {
	cl *call
	chunk
}

// ReadAt reads len(p) bytes at off, many requests in flight at once. It
// returns io.EOF when the file ends before p is full.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, pathErr("read", f.name, errors.New("negative offset"))
	}
	end := off + int64(len(p))
	eof := end // lowest offset found to be at or past the end
	next := off
	var retry []chunk
	var queue []pendingRead
	var firstErr error
	errAt := end
	for {
		for len(queue) < f.c.inflight && firstErr == nil && f.ctx.Err() == nil {
			var ch chunk
			switch {
			case len(retry) > 0:
				ch, retry = retry[0], retry[1:]
			case next < eof:
				ch = chunk{off: next, n: int(min(int64(f.c.chunk), eof-next))}
				next += int64(ch.n)
			default:
				goto wait
			}
			cl, err := f.startRead(ch.off, ch.n)
			if err != nil {
				firstErr, errAt = err, min(errAt, ch.off)
				break
			}
			queue = append(queue, pendingRead{cl, ch})
		}
	wait:
		if len(queue) == 0 {
			break
		}
		pr := queue[0]
		queue = queue[1:]
		r, err := pr.cl.wait(f.ctx, nil)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			errAt = min(errAt, pr.off)
			continue
		}
		data, err := readResult(&r)
		switch {
		case err == io.EOF:
			eof = min(eof, pr.off)
		case err != nil:
			if firstErr == nil {
				firstErr = err
			}
			errAt = min(errAt, pr.off)
		case len(data) > pr.n:
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: %d bytes for a read of %d", ErrBadPacket, len(data), pr.n)
			}
			errAt = min(errAt, pr.off)
		default:
			copy(p[pr.off-off:], data)
			if len(data) < pr.n {
				rest := chunk{off: pr.off + int64(len(data)), n: pr.n - len(data)}
				if len(data) == 0 {
					eof = min(eof, pr.off)
				} else if rest.off < eof {
					retry = append(retry, rest)
				}
			}
		}
		r.release()
	}
	if firstErr == nil && f.ctx.Err() != nil {
		firstErr, errAt = f.ctx.Err(), off
	}
	if firstErr != nil && errAt < eof {
		return int(errAt - off), pathErr("read", f.name, firstErr)
	}
	if eof < end {
		return int(eof - off), io.EOF
	}
	return len(p), nil
}

// Read reads from the file's offset.
func (f *File) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(p) == 0 {
		return 0, nil
	}
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	if n > 0 && err == io.EOF {
		err = nil
	}
	return n, err
}

// WriteTo streams the file from its offset to w with MaxInFlight reads in
// flight, delivering data in order; io.Copy uses it.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var queue []pendingRead
	defer func() {
		for _, pr := range queue { // abandon what is still in flight
			if r, err := pr.cl.wait(f.ctx, nil); err == nil {
				r.release()
			}
		}
	}()
	var total int64
	next := f.off
	atEOF := false
	for {
		for !atEOF && len(queue) < f.c.inflight {
			cl, err := f.startRead(next, f.c.chunk)
			if err != nil {
				return total, pathErr("read", f.name, err)
			}
			queue = append(queue, pendingRead{cl, chunk{next, f.c.chunk}})
			next += int64(f.c.chunk)
		}
		if len(queue) == 0 {
			return total, nil
		}
		pr := queue[0]
		queue = queue[1:]
		r, err := pr.cl.wait(f.ctx, nil)
		if err != nil {
			return total, pathErr("read", f.name, err)
		}
		data, err := readResult(&r)
		if err == io.EOF {
			// Data in later replies would come after a gap (the file grew
			// meanwhile); the stream ends here. The deferred loop
			// collects what is still in flight.
			r.release()
			return total, nil
		}
		if err == nil && len(data) > pr.n {
			err = fmt.Errorf("%w: %d bytes for a read of %d", ErrBadPacket, len(data), pr.n)
		}
		if err != nil {
			r.release()
			return total, pathErr("read", f.name, err)
		}
		nw, werr := w.Write(data)
		total += int64(nw)
		f.off += int64(nw)
		r.release()
		if werr != nil {
			return total, werr
		}
		if len(data) < pr.n && !atEOF {
			// A short read: fetch the rest of this chunk before the data
			// already queued after it.
			rest := make([]byte, pr.n-len(data))
			n, err := f.ReadAt(rest, pr.off+int64(len(data)))
			if n > 0 {
				nw, werr := w.Write(rest[:n])
				total += int64(nw)
				f.off += int64(nw)
				if werr != nil {
					return total, werr
				}
			}
			if err == io.EOF {
				atEOF = true
			} else if err != nil {
				return total, err
			}
		}
	}
}

// startWrite sends a WRITE of data at off.
func (f *File) startWrite(off int64, data []byte) (*call, error) {
	return f.c.startSized(fxpWrite, 64+len(f.handle)+len(data), func(b []byte) []byte {
		b = appendString(b, f.handle)
		b = appendU64(b, uint64(off))
		return appendBytes(b, data)
	})
}

// writeWindow keeps write requests in flight and collects their status.
type writeWindow struct {
	f     *File
	queue []*call
	err   error
}

func (ww *writeWindow) push(cl *call) {
	ww.queue = append(ww.queue, cl)
	if len(ww.queue) >= ww.f.c.inflight {
		ww.pop()
	}
}

func (ww *writeWindow) pop() {
	cl := ww.queue[0]
	ww.queue = ww.queue[1:]
	r, err := cl.wait(ww.f.ctx, nil)
	if err == nil {
		if r.typ == fxpStatus {
			err = statusOf(&r)
		} else {
			err = expect(&r, fxpStatus)
		}
		r.release()
	}
	if err != nil && ww.err == nil {
		ww.err = err
	}
}

func (ww *writeWindow) drain() error {
	for len(ww.queue) > 0 {
		ww.pop()
	}
	if ww.err != nil {
		return pathErr("write", ww.f.name, ww.err)
	}
	return nil
}

// WriteAt writes p at off, many requests in flight at once. On a file
// opened with O_APPEND the server appends whatever off says.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, pathErr("write", f.name, errors.New("negative offset"))
	}
	ww := writeWindow{f: f}
	for done := 0; done < len(p) && ww.err == nil; {
		n := min(f.c.chunk, len(p)-done)
		cl, err := f.startWrite(off+int64(done), p[done:done+n])
		if err != nil {
			ww.err = err
			break
		}
		ww.push(cl)
		done += n
	}
	if err := ww.drain(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Write writes at the file's offset.
func (f *File) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.WriteAt(p, f.off)
	f.off += int64(n)
	return n, err
}

// ReadFrom streams r to the file from its offset with MaxInFlight writes
// in flight; io.Copy uses it. Only ChunkSize × MaxInFlight bytes are
// buffered.
func (f *File) ReadFrom(r io.Reader) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ww := writeWindow{f: f}
	var total int64
	var rerr error
	for ww.err == nil {
		cl, n, err := f.startWriteFrom(r, f.off)
		if cl != nil {
			ww.push(cl)
			f.off += int64(n)
			total += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			rerr = err
			break
		}
	}
	if err := ww.drain(); err != nil {
		return total, err
	}
	return total, rerr
}

// startWriteFrom reads up to a chunk from r straight into a WRITE packet
// at off and sends it. The call is nil when r had nothing to give.
func (f *File) startWriteFrom(r io.Reader, off int64) (*call, int, error) {
	bp := getBuf()
	growBuf(bp, 64+len(f.handle)+f.c.chunk)
	b := startPacket(*bp, fxpWrite)
	b = appendU32(b, 0) // id, set by startRaw
	b = appendString(b, f.handle)
	b = appendU64(b, uint64(off))
	b = appendU32(b, 0) // data length, set below
	hdr := len(b)
	n, err := io.ReadFull(r, b[hdr:hdr+f.c.chunk])
	if n == 0 {
		*bp = b[:0]
		putBuf(bp)
		return nil, 0, err
	}
	b = b[:hdr+n]
	putU32(b[hdr-4:], uint32(n))
	*bp = finishPacket(b)
	cl, serr := f.c.startRaw(bp)
	if serr != nil {
		return nil, 0, serr
	}
	return cl, n, err
}

// Seek sets the offset for Read and Write (io.SeekEnd asks the server for
// the size).
func (f *File) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		fi, err := f.Stat()
		if err != nil {
			return f.off, err
		}
		offset += fi.Size()
	default:
		return f.off, pathErr("seek", f.name, errors.New("invalid whence"))
	}
	if offset < 0 {
		return f.off, pathErr("seek", f.name, errors.New("negative offset"))
	}
	f.off = offset
	return offset, nil
}

// Sync asks the server to flush the file to stable storage
// (fsync@openssh.com); servers without the extension report
// OP_UNSUPPORTED.
func (f *File) Sync() error {
	return f.c.statusReq(f.ctx, "sync", f.name, fxpExtended, func(b []byte) []byte {
		b = appendString(b, extFsync)
		return appendString(b, f.handle)
	})
}
