package wsnet

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// CloseProtocol is the close code for a peer that broke the framing rules.
const CloseProtocol = 1002

// WebSocket opcodes (RFC 6455 §5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

var (
	// errServerClosed is returned by writes on a closed ServerConn.
	errServerClosed = errors.New("websocket: not open")
	// errProtocol is returned by reads of a frame that breaks RFC 6455.
	errProtocol = errors.New("websocket: protocol error")
)

// ServerConn is a server-side WebSocket as a net.Conn carrying raw bytes, on
// a connection a server upgraded (the daemon lets golang.org/x/net/websocket
// do the handshake; its frame layer unmasks byte by byte and hides close
// codes, so the frames are read and written here). Every Write is one
// binary frame, queued (see queueFrame); Read returns the payloads of text,
// binary and continuation frames as one stream, answers pings, and reports
// io.EOF at the client's close frame. Closing sends a close frame with a
// code and reason before closing the TCP connection.
type ServerConn struct {
	raw net.Conn
	br  *bufio.Reader

	// Read state (one reader at a time, the SSH transport's).
	remaining uint64
	mask      [4]byte
	maskPos   int
	eof       bool
	badFrame  bool // the client broke RFC 6455 (closed with 1002)

	// Write state (see server_write.go), guarded by wmu.
	wmu         sync.Mutex
	wcond       *sync.Cond // signalled when the flusher makes progress or ends
	pend, spare []byte     // frames queued; the flusher's last buffer, for reuse
	flushing    bool       // a flusher goroutine is running
	lastBig     bool       // the last frame queued was above maxInlineWrite
	werr        error      // the first write error; every later write returns it
	closed      bool       // the close frame was sent
	released    bool       // the SSH layer closed its side (see Close)
}

// NewServerConn takes over an upgraded connection; buffered holds what the
// HTTP server had read past the upgrade request (nil: nothing).
func NewServerConn(raw net.Conn, buffered *bufio.Reader) *ServerConn {
	var src io.Reader = raw
	if buffered != nil && buffered.Buffered() > 0 {
		pending, _ := buffered.Peek(buffered.Buffered())
		src = io.MultiReader(bytesReaderOf(pending), raw)
	}
	c := &ServerConn{raw: raw, br: bufio.NewReaderSize(src, 64<<10)}
	c.wcond = sync.NewCond(&c.wmu)
	return c
}

func bytesReaderOf(b []byte) io.Reader {
	c := make([]byte, len(b))
	copy(c, b)
	return &sliceReader{b: c}
}

type sliceReader struct{ b []byte }

func (s *sliceReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

func (c *ServerConn) Read(p []byte) (int, error) {
	for c.remaining == 0 {
		if c.eof {
			return 0, io.EOF
		}
		if err := c.nextFrame(); err != nil {
			if errors.Is(err, errProtocol) {
				c.badFrame = true
			}
			return 0, c.readErr(err)
		}
	}
	if uint64(len(p)) > c.remaining {
		p = p[:c.remaining]
	}
	n, err := c.br.Read(p)
	c.unmask(p[:n])
	c.remaining -= uint64(n)
	if err != nil && n == 0 {
		return 0, c.readErr(err)
	}
	return n, nil
}

// readErr turns the end of the connection into io.EOF once closing began.
func (c *ServerConn) readErr(err error) error {
	c.wmu.Lock()
	done := c.closed || c.released
	c.wmu.Unlock()
	if done || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return io.EOF
	}
	return err
}

// unmask XORs p with the frame's masking key, eight bytes at a time.
func (c *ServerConn) unmask(p []byte) {
	if len(p) == 0 {
		return
	}
	var key [8]byte
	for i := range key {
		key[i] = c.mask[(c.maskPos+i)%4]
	}
	k := binary.LittleEndian.Uint64(key[:])
	i := 0
	for ; i+8 <= len(p); i += 8 {
		binary.LittleEndian.PutUint64(p[i:], binary.LittleEndian.Uint64(p[i:])^k)
	}
	for ; i < len(p); i++ {
		p[i] ^= key[i%8]
	}
	c.maskPos = (c.maskPos + len(p)) % 4
}

// nextFrame reads a frame header. Data frames leave their payload to Read;
// control frames are handled here (ping answered, pong ignored, close
// ends the stream).
func (c *ServerConn) nextFrame() error {
	var h [2]byte
	if _, err := io.ReadFull(c.br, h[:]); err != nil {
		return err
	}
	op := h[0] & 0x0f
	if h[0]&0x70 != 0 || h[1]&0x80 == 0 { // reserved bits, or an unmasked client frame
		return errProtocol
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(c.br, l[:]); err != nil {
			return err
		}
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		if _, err := io.ReadFull(c.br, l[:]); err != nil {
			return err
		}
		n = binary.BigEndian.Uint64(l[:])
		if n>>63 != 0 {
			return errProtocol
		}
	}
	if _, err := io.ReadFull(c.br, c.mask[:]); err != nil {
		return err
	}
	c.maskPos = 0
	switch op {
	case opContinuation, opText, opBinary:
		c.remaining = n
		return nil
	case opClose, opPing, opPong:
		if n > 125 || h[0]&0x80 == 0 {
			return errProtocol
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(c.br, payload); err != nil {
			return err
		}
		c.unmask(payload)
		switch op {
		case opPing:
			c.queueFrame(opPong, payload)
		case opClose:
			c.eof = true
		}
		return nil
	}
	return errProtocol
}

// BadFrame reports whether the peer broke the framing rules (a read then
// failed): the close code that fits is CloseProtocol. Read it once reads
// have stopped.
func (c *ServerConn) BadFrame() bool { return c.badFrame }

// LocalAddr, RemoteAddr and the deadline setters make ServerConn a net.Conn.
func (c *ServerConn) LocalAddr() net.Addr                { return c.raw.LocalAddr() }
func (c *ServerConn) RemoteAddr() net.Addr               { return c.raw.RemoteAddr() }
func (c *ServerConn) SetDeadline(t time.Time) error      { return c.raw.SetDeadline(t) }
func (c *ServerConn) SetReadDeadline(t time.Time) error  { return c.raw.SetReadDeadline(t) }
func (c *ServerConn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }
