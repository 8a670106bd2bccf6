package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbe/agent-backend/internal/jsonraw"
)

// MaxStdioMessageBytes bounds one newline-delimited message read by
// ServeStdio and the stream Client. A longer line is answered with a parse
// error and skipped.
const MaxStdioMessageBytes = 64 << 20

// ServeStdio serves s over a newline-delimited JSON stream (the MCP stdio
// transport): one JSON-RPC message or batch per line, no embedded
// newlines. Requests run concurrently and are answered as they finish;
// writes to w are serialised, one Write per response line. Notifications
// (notifications/cancelled in particular) are handled in arrival order.
//
// Where the official SDK's stdio transport silently drops input it cannot
// parse, ServeStdio follows JSON-RPC 2.0: a line that is not JSON gets a
// -32700 error with id null, an invalid message -32600, and a batch (a JSON
// array) is answered with an array of responses on one line, the way the
// SDK's HTTP transport answers batches.
//
// No line written exceeds the Server's message limit
// (ServerOptions.MaxMessageBytes): the official SDK's stdio transport closes
// the connection on a message over 10 MiB, so the Server keeps every result
// within the limit and replaces a response that would still exceed it.
//
// ServeStdio returns nil when r reaches EOF, after the requests still in
// flight have finished and been answered. It returns the read or write
// error that stopped it otherwise. When ctx is done the running requests
// are cancelled (and not answered) and ServeStdio returns ctx.Err() without
// waiting for r: a Read blocked in r cannot be interrupted, so the caller
// should close r (or exit) afterwards.
func ServeStdio(ctx context.Context, s *Server, r io.Reader, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &stdioConn{s: s, w: w, cancel: cancel, era: eraUndecided, closing: make(chan struct{})}
	readDone := make(chan error, 1)
	// The reading goroutine serves requests itself and hands reading on
	// to a new goroutine only when a request runs long (serveInline).
	go c.readLoop(ctx, bufio.NewReaderSize(r, 64<<10), readDone)
	var err error
	select {
	case err = <-readDone:
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	close(c.closing) // open listens end now, not when their tasks do
	c.wg.Wait()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	return err
}

type stdioConn struct {
	s      *Server
	w      io.Writer
	cancel context.CancelFunc
	// era is decided by the first message and then fixed for the
	// connection; only the reading goroutine touches it (one reads at a
	// time, handing over through serveInline's timer).
	era connEra
	// closing is closed once reading has stopped (EOF, an error, ctx).
	closing chan struct{}

	wmu  sync.Mutex
	werr error

	mu      sync.Mutex // guards stopped and wg.Add against the final wg.Wait
	stopped bool
	wg      sync.WaitGroup
}

func (c *stdioConn) write(resp []byte) {
	if resp == nil {
		return
	}
	resp = append(resp, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return
	}
	if _, err := c.w.Write(resp); err != nil {
		c.werr = err
		c.cancel()
	}
	releaseResponse(resp)
}

// notify writes a notification about a running request as a line.
func (c *stdioConn) notify(msg []byte) { c.write(msg) }

// register counts one request in wg, unless ServeStdio is already
// returning.
func (c *stdioConn) register() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	c.wg.Add(1)
	return true
}

// readLoop reads and dispatches messages, serving requests through
// serveInline. Exactly one readLoop reads at a time; the one that meets
// EOF, an error or a done ctx reports it on done.
func (c *stdioConn) readLoop(ctx context.Context, br *bufio.Reader, done chan<- error) {
	for {
		line, err := readLine(br, MaxStdioMessageBytes)
		if ctx.Err() != nil {
			done <- ctx.Err()
			return
		}
		if errors.Is(err, errLineTooLong) {
			c.write(appendError(nil, nil, CodeParseError, "Parse error: message too long", nil))
			continue
		}
		var run func()
		if len(line) > 0 {
			run = c.dispatch(ctx, line)
		}
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			done <- err
			if run != nil {
				run()
			}
			return
		}
		if run != nil && !c.serveInline(ctx, br, done, run) {
			return
		}
	}
}

// stdioInlineBudget is how long a request may run in the reading
// goroutine before reading moves on to a new goroutine.
const stdioInlineBudget = 200 * time.Microsecond

// serveInline serves a request in the reading goroutine. Most requests
// finish within stdioInlineBudget, and then this goroutine simply goes on
// reading: no other goroutine has to be woken, which on a blocking pipe
// saves tens of microseconds per request. A request that takes longer has
// a new goroutine take over reading (so later requests and cancellations
// are not held up); serveInline then reports false and its goroutine ends
// after serving.
func (c *stdioConn) serveInline(ctx context.Context, br *bufio.Reader, done chan<- error, run func()) bool {
	var state atomic.Int32 // 0 running, 1 reader handed on, 2 finished first
	t := time.AfterFunc(stdioInlineBudget, func() {
		if state.CompareAndSwap(0, 1) {
			c.readLoop(ctx, br, done)
		}
	})
	run()
	if state.CompareAndSwap(0, 2) {
		t.Stop()
		return true
	}
	return false
}

// dispatch handles notifications and undecodable lines at once and returns
// nil, or returns the function serving a request, already counted in wg
// and registered for cancellation.
func (c *stdioConn) dispatch(ctx context.Context, line []byte) func() {
	s := c.s
	if isBatch(line) {
		if !c.register() {
			return nil
		}
		return func() {
			defer c.wg.Done()
			c.write(s.HandleBytes(ctx, line))
		}
	}
	m, err := DecodeMessage(line)
	if err == nil {
		c.pin(m)
	}
	if err != nil || !m.IsRequest() {
		c.write(s.handleDecoded(ctx, m, err))
		return nil
	}
	ce := c.era
	if !c.register() {
		return nil
	}
	// Register the call before anything else is read, so a cancellation on
	// the next line cannot overtake it.
	callCtx, cancelCall := context.WithCancelCause(ctx)
	switch {
	case m.Method == "tools/call" && progressToken(m) != nil:
		// Progress notifications go out as lines of their own, before
		// the response (callTool stops them before it answers).
		callCtx = withNotifier(callCtx, c)
	case m.Method == "subscriptions/listen":
		// So do a listen's; it ends when reading stops.
		callCtx = withListenClosing(withNotifier(callCtx, c), c.closing)
	}
	key := s.track(m.ID, cancelCall)
	return func() {
		defer c.wg.Done()
		resp, _ := s.serve(callCtx, m, transportCancels, ce, nil)
		s.untrack(key)
		cancelCall(nil)
		c.write(resp)
	}
}

// pin decides the connection's era with its first message: one claiming a
// modern version in _meta (a supported one: a claim the server refuses
// decides nothing) makes it modern, any other message legacy. A batch
// decides nothing (each of its requests is decided alone).
func (c *stdioConn) pin(m *Message) {
	if c.era != eraUndecided || m.IsResponse() {
		return
	}
	claim, ok := metaClaim(m)
	if !ok {
		c.era = eraPinnedLegacy
		return
	}
	if v, isString := jsonraw.String(claim); isString && isModernVersion(v) {
		c.era = eraPinnedModern
	}
}

var errLineTooLong = errors.New("mcp: line too long")

// readLine returns the next non-empty line without its "\n" or "\r\n".
// A line longer than max is consumed and reported as errLineTooLong.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	tooLong := false
	for {
		frag, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(frag) > max+2 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, frag...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if tooLong {
			if err == nil {
				return nil, errLineTooLong
			}
			return nil, err
		}
		line := bytes.TrimRight(buf, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				return nil, err
			}
			buf = buf[:0]
			continue
		}
		return line, err
	}
}
