package daemon

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"golang.org/x/net/websocket"
)

// WebSocket close codes the daemon sends.
const (
	closeNormal       = 1000 // the SSH side ended, or shutdown
	closeInternal     = 1011 // the SSH side failed
	closeUnauthorized = 4001 // bad or missing token (the TypeScript client relies on it)
)

// errWSClosed is returned by writes on a closed WebSocket.
var errWSClosed = errors.New("daemon: websocket is not open")

// wsConn is a WebSocket as a net.Conn carrying raw bytes: every Write is
// one binary frame, Read returns message payloads as a byte stream (EOF
// when the peer closes), and closing sends a close frame with a code and
// reason before closing the TCP connection.
type wsConn struct {
	ws  *websocket.Conn
	raw net.Conn // the hijacked TCP connection

	wmu    sync.Mutex
	closed bool
}

func newWSConn(ws *websocket.Conn, raw net.Conn) *wsConn {
	ws.PayloadType = websocket.BinaryFrame
	return &wsConn{ws: ws, raw: raw}
}

func (c *wsConn) Read(p []byte) (int, error) {
	n, err := c.ws.Read(p)
	if err != nil && n == 0 {
		c.wmu.Lock()
		closed := c.closed
		c.wmu.Unlock()
		if closed || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			return 0, io.EOF
		}
	}
	return n, err
}

func (c *wsConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return 0, errWSClosed
	}
	return c.ws.Write(p)
}

// Close closes with 1000 (the duplex's final()).
func (c *wsConn) Close() error { return c.closeWith(closeNormal, "") }

// closeWith sends a close frame with code and reason (once) and closes the
// connection; later calls do nothing.
func (c *wsConn) closeWith(code int, reason string) error {
	c.wmu.Lock()
	if c.closed {
		c.wmu.Unlock()
		return nil
	}
	c.closed = true
	payload := make([]byte, 2, 2+len(reason))
	binary.BigEndian.PutUint16(payload, uint16(code))
	payload = append(payload, reason...)
	c.raw.SetWriteDeadline(time.Now().Add(time.Second))
	c.ws.PayloadType = websocket.CloseFrame
	_, err := c.ws.Write(payload)
	c.wmu.Unlock()
	cerr := c.raw.Close()
	if err == nil {
		err = cerr
	}
	return err
}

func (c *wsConn) LocalAddr() net.Addr                { return c.raw.LocalAddr() }
func (c *wsConn) RemoteAddr() net.Addr               { return c.raw.RemoteAddr() }
func (c *wsConn) SetDeadline(t time.Time) error      { return c.raw.SetDeadline(t) }
func (c *wsConn) SetReadDeadline(t time.Time) error  { return c.raw.SetReadDeadline(t) }
func (c *wsConn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }
