package sftpjail

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// ServerOptions configures Serve. The zero value is a safe default.
type ServerOptions struct {
	// RootPath is the absolute host path of the root directory. Serve uses
	// it for two things only: an absolute request path that starts with it
	// is taken as naming a file under the root (the conventions' second
	// case), and an absolute symbolic link target under it counts as
	// pointing inside. It never appears in a reply. Empty means the
	// absolute form of root.Name().
	RootPath string

	// MaxHandles bounds the files and directories a session may hold open
	// at once; 0 means 256.
	MaxHandles int

	// Workers bounds the READ and WRITE requests processed concurrently;
	// 0 means 8, 1 processes every request in the goroutine that reads
	// them. Data requests run inline while they complete fast (page
	// cache: a goroutine hand-off would cost more than it overlaps) and
	// spread over the workers as soon as one blocks for a millisecond or
	// more. Every other request waits for those in flight, and replies
	// leave in request order.
	Workers int

	// OnChange, when set, is called after each request that changes (or
	// tried to change) the files under the root, once answered: every
	// mkdir, rmdir, remove, rename, link, symlink and setstat, and the
	// close of a file opened for writing (one call for all its writes).
	// It runs in the session's goroutine, so it must be quick.
	OnChange func(Change)

	// alwaysConcurrent skips the adaptive inline phase (tests).
	alwaysConcurrent bool
}

const (
	defaultMaxHandles = 256
	defaultWorkers    = 8
	readdirBatch      = 100
)

// Stream joins a reader and a writer, such as a process's standard input
// and output, into the stream Serve takes. Unlike an ad hoc struct it lets
// Serve see w itself: when w is a pipe or socket file (an *os.File or
// net.Conn), READ replies go from the file to w with splice(2) on Linux,
// without copying the data through user space, and w's buffer is grown.
func Stream(r io.Reader, w io.Writer) io.ReadWriter { return stream{r, w} }

type stream struct {
	io.Reader
	w io.Writer
}

func (s stream) Write(p []byte) (int, error) { return s.w.Write(p) }

// Serve speaks SFTP version 3 on rw until the client ends the session or
// sends a malformed packet, confined to root: every path is resolved with
// package wspath and every file access goes through root, so no request
// can reach a file outside. It returns nil when the client closes the
// stream at a packet boundary, ErrBadPacket (wrapped) for a malformed or
// oversized packet, or the I/O error that ended the session. All handles
// are closed before Serve returns.
//
// When rw is a pipe or socket file, or a Stream whose writer is one, Serve
// splices READ data to it and grows its send buffer (see Stream).
func Serve(rw io.ReadWriter, root *os.Root, opts *ServerOptions) error {
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	if o.RootPath == "" {
		abs, err := filepath.Abs(root.Name())
		if err != nil {
			return fmt.Errorf("sftp: root path: %w", err)
		}
		o.RootPath = abs
	}
	o.RootPath = filepath.Clean(o.RootPath)
	if o.MaxHandles <= 0 {
		o.MaxHandles = defaultMaxHandles
	}
	if o.Workers <= 0 {
		o.Workers = defaultWorkers
	}
	s := &session{
		root:     root,
		hostRoot: o.RootPath,
		handles:  newHandleTable(o.MaxHandles),
		sem:      make(chan struct{}, o.Workers),
		serial:   o.Workers == 1,

		alwaysConcurrent: o.alwaysConcurrent,
		onChange:         o.OnChange,
	}
	out := io.Writer(rw)
	if st, ok := rw.(stream); ok {
		out = st.w
	}
	if s.spl = newSplicer(out); s.spl != nil {
		defer s.spl.close()
	}
	return s.run(rw)
}

// session is the state of one SFTP connection.
type session struct {
	root     *os.Root
	hostRoot string
	handles  *handleTable
	ids      idNames

	sem      chan struct{} // bounds concurrent data requests
	serial   bool          // Workers == 1: no concurrent requests
	lastDone chan struct{} // closed once the latest concurrent reply is written
	burst    atomic.Int64  // data requests still to run concurrently
	slow     atomic.Int32  // data requests in a row that took slowOp or more

	alwaysConcurrent bool
	inflight         sync.WaitGroup
	mu               sync.Mutex
	pending          []span // data requests in flight

	w   *replyWriter
	spl *splicer // nil: READ data is copied

	onChange func(Change)
}

// span is the byte range a concurrent READ or WRITE touches.
type span struct {
	h          *handle
	start, end uint64
	write      bool
}

func (s *session) run(rw io.ReadWriter) (err error) {
	r := bufio.NewReaderSize(rw, 64*1024)
	s.w = &replyWriter{bw: bufio.NewWriterSize(rw, 64*1024)}
	defer func() {
		s.inflight.Wait()
		s.handles.closeAll()
		if ferr := s.w.flush(); err == nil {
			err = ferr
		}
	}()

	buf := getBuf()
	body, err := readPacket(r, buf)
	if err != nil {
		putBuf(buf)
		return cleanEOF(err)
	}
	if body[0] != fxpInit {
		putBuf(buf)
		return fmt.Errorf("%w: first packet type %d is not INIT", ErrBadPacket, body[0])
	}
	putBuf(buf)
	s.send(versionPacket())

	for {
		if err := s.w.failed(); err != nil {
			return err
		}
		// Replies queued so far must be on their way before the loop may
		// block waiting for the client.
		if !packetBuffered(r) {
			if err := s.w.flush(); err != nil {
				return err
			}
		}
		buf := getBuf()
		body, err := readPacket(r, buf)
		if err != nil {
			putBuf(buf)
			return cleanEOF(err)
		}
		if err := s.dispatch(body, buf); err != nil {
			return err
		}
	}
}

// cleanEOF turns the end of the stream at a packet boundary into nil.
func cleanEOF(err error) error {
	if errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}

// versionPacket announces version 3 and the OpenSSH extensions served.
func versionPacket() *[]byte {
	bp := getBuf()
	b := startPacket(*bp, fxpVersion)
	b = appendU32(b, protocolVersion)
	for _, e := range [][2]string{{extPosixRename, "1"}, {extHardlink, "1"}, {extFsync, "1"}, {extLimits, "1"}} {
		b = appendString(b, e[0])
		b = appendString(b, e[1])
	}
	*bp = finishPacket(b)
	return bp
}

// replyWriter serializes replies onto the stream. Small replies collect in
// a buffer, flushed before the session waits for input (and after each
// concurrent reply); large ones go out in one write.
type replyWriter struct {
	mu  sync.Mutex
	bw  *bufio.Writer
	err error
}

func (w *replyWriter) write(p *[]byte, flush bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer putBuf(p)
	if w.err != nil {
		return
	}
	if len(*p) > w.bw.Available() && w.bw.Buffered() > 0 {
		if w.err = w.bw.Flush(); w.err != nil {
			return
		}
	}
	if _, w.err = w.bw.Write(*p); w.err == nil && flush {
		w.err = w.bw.Flush()
	}
}

func (w *replyWriter) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.bw.Flush()
	}
	return w.err
}

func (w *replyWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// packetBuffered reports whether r holds a whole packet already, so
// reading it cannot block.
func packetBuffered(r *bufio.Reader) bool {
	n := r.Buffered()
	if n < 4 {
		return false
	}
	hdr, err := r.Peek(4)
	if err != nil {
		return false
	}
	return uint64(n) >= 4+uint64(binary.BigEndian.Uint32(hdr))
}

// send queues a reply of the main loop; sendNow writes and flushes the
// reply of a concurrent request.
func (s *session) send(p *[]byte)    { s.w.write(p, false) }
func (s *session) sendNow(p *[]byte) { s.w.write(p, true) }

// barrier waits until no data request is in flight.
func (s *session) barrier() { s.inflight.Wait() }
