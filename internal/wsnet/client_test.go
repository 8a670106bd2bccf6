package wsnet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

func wsURL(s *httptest.Server, path string) string {
	return "ws" + strings.TrimPrefix(s.URL, "http") + path
}

func TestDialEchoBinary(t *testing.T) {
	var gotAuth string
	srv := httptest.NewServer(websocket.Server{Handler: func(ws *websocket.Conn) {
		gotAuth = ws.Request().Header.Get("Authorization")
		ws.PayloadType = websocket.BinaryFrame
		io.Copy(ws, ws)
	}})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, wsURL(srv, "/ssh?x=1"), DialConfig{Header: http.Header{"Authorization": {"Bearer t"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, size := range []int{0, 1, 125, 126, 65535, 65536, 300000} {
		msg := bytes.Repeat([]byte{0, 0xff, 'a', '\n'}, size/4+1)[:size]
		if size == 0 {
			continue
		}
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, size)
		if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("size %d: echo differs (%v)", size, err)
		}
	}
	if gotAuth != "Bearer t" {
		t.Errorf("Authorization %q", gotAuth)
	}
}

// closeWith is a server that completes the upgrade and closes with code.
func closeWith(code int, reason string) http.Handler {
	return websocket.Server{Handler: func(ws *websocket.Conn) {
		p := binary.BigEndian.AppendUint16(nil, uint16(code))
		ws.PayloadType = websocket.CloseFrame
		ws.Write(append(p, reason...))
		time.Sleep(50 * time.Millisecond)
	}}
}

func TestDialSeesCloseCodes(t *testing.T) {
	for _, tc := range []struct {
		code   int
		unauth bool
	}{{CloseUnauthorized, true}, {CloseNormal, false}, {CloseInternal, false}} {
		srv := httptest.NewServer(closeWith(tc.code, "why"))
		c, err := Dial(context.Background(), wsURL(srv, "/"), DialConfig{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Read(make([]byte, 10))
		if IsUnauthorized(err) != tc.unauth || err == nil {
			t.Errorf("code %d: read error %v", tc.code, err)
		}
		if code, reason := c.CloseCode(); code != tc.code || reason != "why" {
			t.Errorf("CloseCode = %d %q", code, reason)
		}
		c.Close()
		srv.Close()
	}
}

func TestDialRefusals(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/401" {
			w.WriteHeader(401)
			return
		}
		w.WriteHeader(404)
	}))
	defer srv.Close()
	if _, err := Dial(context.Background(), wsURL(srv, "/401"), DialConfig{}); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("401: %v", err)
	}
	if _, err := Dial(context.Background(), wsURL(srv, "/x"), DialConfig{}); err == nil || IsUnauthorized(err) {
		t.Errorf("404: %v", err)
	}
	// The status and the start of the body reach the caller.
	teapot := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"message":"short and stout"}`+strings.Repeat(" ", 4<<10), http.StatusTeapot)
	}))
	defer teapot.Close()
	_, err := Dial(context.Background(), wsURL(teapot, "/"), DialConfig{})
	var ue *UpgradeError
	if !errors.As(err, &ue) || ue.StatusCode != 418 || ue.Body != `{"message":"short and stout"}` || IsUnauthorized(err) || IsBusy(err) {
		t.Errorf("418: %#v", err)
	}
	if _, err := Dial(context.Background(), "http://x", DialConfig{}); err == nil {
		t.Error("http scheme accepted")
	}
	// A server that accepts TCP and never answers: ctx bounds the handshake.
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { time.Sleep(2 * time.Second) }))
	defer stall.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Dial(ctx, wsURL(stall, "/"), DialConfig{}); err == nil {
		t.Error("stalled handshake succeeded")
	}
	if time.Since(start) > 1500*time.Millisecond {
		t.Error("ctx did not bound the handshake")
	}
}

func FuzzReadFrames(f *testing.F) {
	f.Add([]byte{0x82, 0x03, 'a', 'b', 'c'})
	f.Add([]byte{0x89, 0x00, 0x82, 0x01, 'x'})
	f.Add([]byte{0x88, 0x02, 0x0f, 0xa1})
	f.Add([]byte{0x82, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, stream []byte) {
		c := &Conn{raw: nopConn{}, br: newReader(stream)}
		buf := make([]byte, 512)
		for i := 0; i < 1000; i++ {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	})
}

func TestMaskBytes(t *testing.T) {
	mask := [4]byte{1, 2, 3, 4}
	for n := 0; n < 40; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i * 7)
		}
		want := append([]byte(nil), b...)
		for i := range want {
			want[i] ^= mask[i%4]
		}
		maskBytes(b, mask)
		if !bytes.Equal(b, want) {
			t.Fatalf("n=%d: %v, want %v", n, b, want)
		}
	}
}
