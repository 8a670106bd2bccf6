package daemon

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/wsnet"
)

// healthy fails the test unless /health answers 200.
func (d *testDaemon) healthy(t *testing.T) {
	t.Helper()
	resp, err := http.Get(d.url + "/health")
	if err != nil {
		t.Fatalf("daemon unhealthy: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("health %d", resp.StatusCode)
	}
}

// TestScopeThroughSymlink: an X-Scope-Path naming a link to a sibling
// tenant (or out of the workspace) is refused; the sibling's file is never
// served.
func TestScopeThroughSymlink(t *testing.T) {
	d := startDaemon(t, Config{})
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("OUTSIDE-CANARY"), 0o644)
	os.MkdirAll(filepath.Join(d.RootDir(), "tenants", "b"), 0o755)
	os.WriteFile(filepath.Join(d.RootDir(), "tenants", "b", "secret"), []byte("SIBLING-CANARY"), 0o644)
	os.Symlink("b", filepath.Join(d.RootDir(), "tenants", "a"))
	os.Symlink(outside, filepath.Join(d.RootDir(), "out"))
	for _, sc := range []string{"tenants/a", "out"} {
		status, body := d.post(t, toolCall("read_text_file", `{"path":"secret"}`), "X-Scope-Path", sc)
		if strings.Contains(body, "CANARY") || status == 200 && !strings.Contains(body, `"isError":true`) {
			t.Errorf("scope %s: %d %s", sc, status, body)
		}
		if status != 400 {
			t.Errorf("scope %s: status %d, want 400: %s", sc, status, body)
		}
	}
	d.healthy(t)
}

// TestMalformedWebSocketTraffic: garbage instead of SSH, a stalled client
// that never speaks, and an abrupt disconnect mid-handshake leave the
// daemon healthy; the stalled one is cut at the handshake deadline.
func TestMalformedWebSocketTraffic(t *testing.T) {
	d := startDaemon(t, Config{SSHHandshakeTimeout: 500 * time.Millisecond})
	// Garbage: the SSH server fails, the WebSocket closes with 1011.
	c, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	br := wsUpgrade(t, c)
	// One masked binary frame carrying a bogus identification line.
	c.Write(maskedFrame(2, []byte("GARBAGE-NOT-SSH\r\n"+strings.Repeat("x", 300)+"\r\n")))
	code := readUntilClose(t, br)
	c.Close()
	if code != wsnet.CloseInternal {
		t.Errorf("garbage: close %d, want 1011", code)
	}
	// Stalled: never send anything; the handshake deadline ends it.
	c, _ = net.Dial("tcp", d.addr)
	br = wsUpgrade(t, c)
	start := time.Now()
	code = readUntilClose(t, br)
	c.Close()
	if code != wsnet.CloseInternal || time.Since(start) > 10*time.Second {
		t.Errorf("stalled: close %d after %v", code, time.Since(start))
	}
	// An unmasked client frame breaks RFC 6455: 1002.
	c, _ = net.Dial("tcp", d.addr)
	br = wsUpgrade(t, c)
	c.Write([]byte{0x82, 0x03, 'a', 'b', 'c'})
	code = readUntilClose(t, br)
	c.Close()
	if code != wsnet.CloseProtocol {
		t.Errorf("unmasked frame: close %d, want 1002", code)
	}
	// Abrupt: a partial frame header, then gone.
	c, _ = net.Dial("tcp", d.addr)
	wsUpgrade(t, c)
	c.Write([]byte{0x82, 0xff})
	c.Close()
	// A huge announced frame length is not allocated up front.
	c, _ = net.Dial("tcp", d.addr)
	wsUpgrade(t, c)
	c.Write([]byte{0x82, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4})
	c.Close()
	// A stalled plain HTTP client that never finishes its headers.
	slow, _ := net.Dial("tcp", d.addr)
	io.WriteString(slow, "POST /mcp HTTP/1.1\r\nHost: x\r\n")
	defer slow.Close()
	d.healthy(t)
	status, body := d.post(t, toolCall("exec", `{"command":"echo still-ok"}`))
	if status != 200 || !strings.Contains(body, "still-ok") {
		t.Errorf("after attacks: %d %s", status, body)
	}
}

func wsUpgrade(t *testing.T, c net.Conn) *bytesReader {
	t.Helper()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(c, "GET /ssh HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: MDEyMzQ1Njc4OWFiY2RlZg==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	br := &bytesReader{c: c}
	hdr := br.until([]byte("\r\n\r\n"))
	if !bytes.HasPrefix(hdr, []byte("HTTP/1.1 101")) {
		t.Fatalf("upgrade: %q", hdr)
	}
	return br
}

// bytesReader reads a connection byte by byte (test traffic is small).
type bytesReader struct {
	c   net.Conn
	buf []byte
}

func (b *bytesReader) byte() (byte, error) {
	var p [1]byte
	_, err := io.ReadFull(b.c, p[:])
	return p[0], err
}

func (b *bytesReader) until(sep []byte) []byte {
	var out []byte
	for !bytes.HasSuffix(out, sep) {
		c, err := b.byte()
		if err != nil {
			return out
		}
		out = append(out, c)
	}
	return out
}

// readUntilClose reads server frames until a close frame and returns its
// code (-1 if the connection ended without one).
func readUntilClose(t *testing.T, b *bytesReader) int {
	for {
		h0, err := b.byte()
		if err != nil {
			return -1
		}
		h1, _ := b.byte()
		n := int(h1 & 0x7f)
		if n == 126 {
			x, _ := b.byte()
			y, _ := b.byte()
			n = int(x)<<8 | int(y)
		}
		p := make([]byte, n)
		io.ReadFull(b.c, p)
		if h0&0x0f == 8 {
			if n < 2 {
				return 0
			}
			return int(p[0])<<8 | int(p[1])
		}
	}
}

// maskedFrame builds a client frame (masking key zero).
func maskedFrame(op byte, payload []byte) []byte {
	f := []byte{0x80 | op}
	switch {
	case len(payload) < 126:
		f = append(f, 0x80|byte(len(payload)))
	default:
		f = append(f, 0x80|126, byte(len(payload)>>8), byte(len(payload)))
	}
	f = append(f, 0, 0, 0, 0)
	return append(f, payload...)
}

// TestStalledBody: a client that stops mid-body loses its connection at
// the body deadline and frees its in-flight slot; a long tool call after
// a complete body is not cut by that deadline.
func TestStalledBody(t *testing.T) {
	d := startDaemon(t, Config{MaxInFlight: 1, BodyReadTimeout: 300 * time.Millisecond})
	c, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Accept: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, _ := io.ReadAll(c) // the daemon answers (400) and closes, or just closes
	if bytes.Contains(resp, []byte(" 200 ")) {
		t.Errorf("stalled body answered 200: %q", resp)
	}
	status, body := d.post(t, toolCall("exec", `{"command":"sleep 1; echo slow-ok"}`))
	if status != 200 || !strings.Contains(body, "slow-ok") {
		t.Errorf("long call after the body deadline: %d %s", status, body)
	}
}
