package wsnet

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
)

// ErrNotWebSocket is returned by Upgrade for a request that is not a valid
// WebSocket (version 13) upgrade; the caller answers it with 400.
var ErrNotWebSocket = errors.New("websocket: not a websocket upgrade request")

// Upgrade completes a WebSocket handshake on an HTTP request and returns the
// connection in server mode (frames sent unmasked, client frames required
// masked). No Origin check is made: the daemon's clients are programs, and
// it authenticates with a token instead. After an error nothing has been
// written to w.
func Upgrade(w http.ResponseWriter, r *http.Request) (*Conn, error) {
	key := r.Header.Get("Sec-WebSocket-Key")
	if r.Method != http.MethodGet || !headerHas(r.Header, "Connection", "upgrade") ||
		!headerHas(r.Header, "Upgrade", "websocket") || r.Header.Get("Sec-WebSocket-Version") != "13" {
		return nil, ErrNotWebSocket
	}
	if raw, err := base64.StdEncoding.DecodeString(key); err != nil || len(raw) != 16 {
		return nil, ErrNotWebSocket
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil, errors.New("websocket: response cannot be hijacked")
	}
	raw, brw, err := hj.Hijack()
	if err != nil {
		return nil, err
	}
	sum := sha1.Sum([]byte(key + acceptGUID))
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n"
	if _, err := raw.Write([]byte(resp)); err != nil {
		raw.Close()
		return nil, err
	}
	return &Conn{raw: raw, br: brw.Reader, server: true}, nil
}

// headerHas reports whether a comma-separated header contains token
// (case-insensitive).
func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, part := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}
