package wsnet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// echoServer upgrades with Upgrade and echoes, or closes with a code when
// the path says so.
func echoServer(t *testing.T) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Upgrade(w, r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.URL.Path == "/deny" {
			c.CloseWith(CloseUnauthorized, "Unauthorized")
			return
		}
		io.Copy(c, c)
		c.Close()
	}))
}

func TestUpgradeEchoWithOurClient(t *testing.T) {
	srv := echoServer(t)
	defer srv.Close()
	c, err := Dial(context.Background(), wsURL(srv, "/"), DialConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, n := range []int{1, 7, 4096, 4097, 70000, 1 << 20} {
		msg := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, n)
		if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("n=%d: echo differs (%v)", n, err)
		}
	}
}

// TestUpgradeInteropXNet: the x/net client (what other Go programs use)
// talks to our server, and sees our close code as a closed connection.
func TestUpgradeInteropXNet(t *testing.T) {
	srv := echoServer(t)
	defer srv.Close()
	ws, err := websocket.Dial(wsURL(srv, "/"), "", "http://localhost/")
	if err != nil {
		t.Fatal(err)
	}
	ws.PayloadType = websocket.BinaryFrame
	if _, err := ws.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(ws, got); err != nil || string(got) != "ping" {
		t.Fatalf("%q %v", got, err)
	}
	ws.Close()
}

func TestUpgradeCloseCodeReachesClient(t *testing.T) {
	srv := echoServer(t)
	defer srv.Close()
	c, err := Dial(context.Background(), wsURL(srv, "/deny"), DialConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("read: %v", err)
	}
	if code, reason := c.CloseCode(); code != 4001 || reason != "Unauthorized" {
		t.Errorf("close %d %q", code, reason)
	}
}

func TestUpgradeRefusesBadRequests(t *testing.T) {
	srv := echoServer(t)
	defer srv.Close()
	for _, h := range []map[string]string{
		{},
		{"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13"},
		{"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "8", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="},
		{"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "short"},
	} {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("%v: status %d", h, resp.StatusCode)
		}
	}
}

// TestServerRefusesUnmaskedFrames: RFC 6455 requires clients to mask.
func TestServerRefusesUnmaskedFrames(t *testing.T) {
	c := &Conn{raw: nopConn{}, br: newReader([]byte{0x82, 0x01, 'x'}), server: true}
	if _, err := c.Read(make([]byte, 4)); err == nil {
		t.Fatal("unmasked client frame accepted")
	}
}
