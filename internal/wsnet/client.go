// Package wsnet is the WebSocket framing (RFC 6455) of the daemon's
// SSH-over-WebSocket endpoint, both sides of it, carrying a byte stream in
// binary frames: the client Remote dials (Dial, Conn) and the server side
// the daemon runs on an upgraded connection (ServerConn). It exists beside
// golang.org/x/net/websocket because both sides must see and choose close
// codes (the daemon refuses a bad token by completing the upgrade and
// closing with 4001, which the x/net client reports as a plain EOF), and
// because the server side's frames are read and written in bulk.
package wsnet

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Close codes with a meaning for agentbe (see also CloseProtocol).
const (
	CloseNormal       = 1000 // the SSH side ended, or shutdown
	CloseInternal     = 1011 // the SSH side failed
	CloseUnauthorized = 4001 // bad or missing token (the TypeScript client relies on it)
)

// ErrUnauthorized is returned when the server refused the credentials: an
// HTTP 401 to the upgrade, or a close with code 4001. (An upgrade answered
// 503 is ErrBusy instead: see BusyError.)
var ErrUnauthorized = errors.New("websocket: unauthorized")

// MaxFrame bounds the payload of one incoming frame (control frames are
// bounded by the protocol to 125 bytes).
const MaxFrame = 16 << 20

const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// DialConfig configures Dial.
type DialConfig struct {
	// Header is sent with the upgrade request (Authorization, …).
	Header http.Header
	// TLS configures wss:// connections; nil uses the defaults.
	TLS *tls.Config
	// Dialer makes the TCP connection; nil uses a zero net.Dialer.
	Dialer *net.Dialer
}

// Dial opens a WebSocket to rawURL (ws:// or wss://) and returns it as a
// stream; ctx bounds the connection and the handshake.
func Dial(ctx context.Context, rawURL string, cfg DialConfig) (*Conn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	host := u.Host
	switch u.Scheme {
	case "ws":
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
	case "wss":
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), "443")
		}
	default:
		return nil, fmt.Errorf("websocket: unsupported scheme %q", u.Scheme)
	}
	d := cfg.Dialer
	if d == nil {
		d = &net.Dialer{}
	}
	raw, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "wss" {
		tc := cfg.TLS.Clone()
		if tc == nil {
			tc = &tls.Config{}
		}
		if tc.ServerName == "" {
			tc.ServerName = u.Hostname()
		}
		t := tls.Client(raw, tc)
		if err := t.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		raw = t
	}
	if dl, ok := ctx.Deadline(); ok {
		raw.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Unix(1, 0)) })
	c, err := handshake(raw, u, cfg.Header)
	if !stop() || err != nil {
		raw.Close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	raw.SetDeadline(time.Time{})
	return c, nil
}

func handshake(raw net.Conn, u *url.URL, header http.Header) (*Conn, error) {
	var nonce [16]byte
	rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: u.Path, RawQuery: u.RawQuery},
		Host: u.Host, Header: http.Header{}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	if req.URL.Path == "" {
		req.URL.Path = "/"
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Sec-WebSocket-Key", key)
	req.Header.Set("Sec-WebSocket-Version", "13")
	if err := req.Write(raw); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(raw, 64<<10)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		be := busyError(resp, time.Now())
		resp.Body.Close()
		return nil, be
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		resp.Body.Close()
		return nil, &UpgradeError{StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(body))}
	}
	resp.Body.Close()
	sum := sha1.Sum([]byte(key + acceptGUID))
	if resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		return nil, errors.New("websocket: bad Sec-WebSocket-Accept")
	}
	return &Conn{raw: raw, br: br}, nil
}

// UpgradeError is the error of an upgrade the server answered with another
// status than 101 (or 503, a BusyError). 401 and 403 match ErrUnauthorized
// (errors.Is).
type UpgradeError struct {
	StatusCode int
	Body       string // the start of the response body, trimmed
}

func (e *UpgradeError) Error() string {
	if e.unauthorized() {
		return fmt.Sprintf("%v (HTTP %d)", ErrUnauthorized, e.StatusCode)
	}
	return fmt.Sprintf("websocket: upgrade refused: HTTP %d", e.StatusCode)
}

// Is makes a 401 or 403 match ErrUnauthorized.
func (e *UpgradeError) Is(target error) bool { return target == ErrUnauthorized && e.unauthorized() }

func (e *UpgradeError) unauthorized() bool {
	return e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden
}

// Conn is an open WebSocket used as a byte stream: each Write is one
// masked binary frame, Read returns the payload of data frames in order.
// Read answers pings; a close frame ends the stream with io.EOF, or with an
// error wrapping ErrUnauthorized for code 4001. Read and Write may be used
// concurrently, but not two Reads or two Writes at once.
type Conn struct {
	raw net.Conn
	br  *bufio.Reader

	left   uint64 // payload bytes left in the current data frame
	mask   [4]byte
	masked bool
	pos    int

	wmu       sync.Mutex
	closeSent bool

	closeMu     sync.Mutex
	closeCode   int
	closeReason string
}

// CloseCode returns the code and reason of the close frame received, or 0.
func (c *Conn) CloseCode() (int, string) {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	return c.closeCode, c.closeReason
}

// Read reads payload bytes.
func (c *Conn) Read(p []byte) (int, error) {
	for c.left == 0 {
		if err := c.nextDataFrame(); err != nil {
			return 0, err
		}
	}
	if uint64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	if c.masked {
		var m [4]byte
		for i := range m {
			m[i] = c.mask[(c.pos+i)%4]
		}
		maskBytes(p[:n], m)
		c.pos += n
	}
	c.left -= uint64(n)
	if err == io.EOF && c.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// nextDataFrame reads frame headers, handling control frames, until one
// with payload arrives.
func (c *Conn) nextDataFrame() error {
	for {
		var h [2]byte
		if _, err := io.ReadFull(c.br, h[:]); err != nil {
			return err
		}
		op := h[0] & 0x0f
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(c.br, b[:]); err != nil {
				return err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(c.br, b[:]); err != nil {
				return err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		c.masked = h[1]&0x80 != 0
		if c.masked {
			if _, err := io.ReadFull(c.br, c.mask[:]); err != nil {
				return err
			}
		}
		c.pos = 0
		if op >= 8 { // control frame
			if n > 125 {
				return errors.New("websocket: oversized control frame")
			}
			payload := make([]byte, n)
			if _, err := io.ReadFull(c.br, payload); err != nil {
				return err
			}
			if c.masked {
				maskBytes(payload, c.mask)
			}
			switch op {
			case 8:
				return c.gotClose(payload)
			case 9:
				if err := c.writeFrame(10, payload); err != nil {
					return err
				}
			}
			continue
		}
		if n > MaxFrame {
			return fmt.Errorf("websocket: frame of %d bytes exceeds %d", n, MaxFrame)
		}
		if n > 0 {
			c.left = n
			return nil
		}
	}
}

func (c *Conn) gotClose(payload []byte) error {
	code, reason := 1005, ""
	if len(payload) >= 2 {
		code, reason = int(binary.BigEndian.Uint16(payload)), string(payload[2:])
	}
	c.closeMu.Lock()
	c.closeCode, c.closeReason = code, reason
	c.closeMu.Unlock()
	c.sendClose(code)
	if code == CloseUnauthorized {
		return fmt.Errorf("%w: %s", ErrUnauthorized, reason)
	}
	return io.EOF
}

// Write sends p as one binary frame.
func (c *Conn) Write(p []byte) (int, error) {
	if err := c.writeFrame(2, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *Conn) writeFrame(op byte, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closeSent {
		return net.ErrClosed
	}
	return c.writeFrameLocked(op, p)
}

func (c *Conn) writeFrameLocked(op byte, p []byte) error {
	const maskBit = 0x80              // a client masks every frame
	hdr := make([]byte, 0, 14+len(p)) // header, key and payload in one write
	hdr = append(hdr, 0x80|op)
	switch n := len(p); {
	case n < 126:
		hdr = append(hdr, maskBit|byte(n))
	case n <= 0xffff:
		hdr = append(hdr, maskBit|126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, maskBit|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	var mask [4]byte
	rand.Read(mask[:])
	hdr = append(hdr, mask[:]...)
	start := len(hdr)
	hdr = append(hdr, p...)
	maskBytes(hdr[start:], mask)
	_, err := c.raw.Write(hdr)
	return err
}

// maskBytes XORs b with the repeated 4-byte mask, eight bytes at a time.
func maskBytes(b []byte, mask [4]byte) {
	m32 := binary.LittleEndian.Uint32(mask[:])
	m64 := uint64(m32) | uint64(m32)<<32
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], binary.LittleEndian.Uint64(b[i:])^m64)
	}
	for ; i < len(b); i++ {
		b[i] ^= mask[i%4]
	}
}

// sendClose sends a close frame once.
func (c *Conn) sendClose(code int) { c.sendCloseReason(code, "") }

func (c *Conn) sendCloseReason(code int, reason string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closeSent {
		return
	}
	if len(reason) > 123 {
		reason = reason[:123]
	}
	b := binary.BigEndian.AppendUint16(nil, uint16(code))
	c.raw.SetWriteDeadline(time.Now().Add(time.Second))
	_ = c.writeFrameLocked(8, append(b, reason...))
	c.closeSent = true
}

// Close sends a normal close frame and closes the connection.
func (c *Conn) Close() error { return c.CloseWith(CloseNormal, "") }

// CloseWith sends a close frame with code and reason (once; a reason is cut
// to the 123 bytes a control frame can hold) and closes the connection.
func (c *Conn) CloseWith(code int, reason string) error {
	c.sendCloseReason(code, reason)
	return c.raw.Close()
}

// LocalAddr, RemoteAddr and the deadline setters make Conn a net.Conn.
func (c *Conn) LocalAddr() net.Addr                { return c.raw.LocalAddr() }
func (c *Conn) RemoteAddr() net.Addr               { return c.raw.RemoteAddr() }
func (c *Conn) SetDeadline(t time.Time) error      { return c.raw.SetDeadline(t) }
func (c *Conn) SetReadDeadline(t time.Time) error  { return c.raw.SetReadDeadline(t) }
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }

// IsUnauthorized reports whether err is the server refusing the
// credentials.
func IsUnauthorized(err error) bool { return errors.Is(err, ErrUnauthorized) }
