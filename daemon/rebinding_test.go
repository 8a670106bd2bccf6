package daemon

import (
	"bufio"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/wsnet"
)

// rebindRoute is one request of the daemon's surface, as the rebinding
// tests send it.
type rebindRoute struct {
	name, method, target, body string
	upgrade                    bool // a WebSocket upgrade (/ssh)
}

var rebindRoutes = []rebindRoute{
	{name: "mcp", method: "POST", target: "/mcp", body: initBody},
	{name: "v1 fs", method: "GET", target: "/v1/fs/entries?path=."},
	{name: "v1 fs write", method: "PUT", target: "/v1/fs/file?path=planted.txt", body: "x"},
	{name: "v1 acp", method: "GET", target: "/v1/acp"},
	{name: "v1 config", method: "GET", target: "/v1/config/mcp?directory=.&mcpName=x"},
	{name: "v1 agents", method: "GET", target: "/v1/agents"},
	{name: "acp root", method: "GET", target: "/"},
	{name: "ssh", method: "GET", target: "/ssh", upgrade: true},
	{name: "health", method: "GET", target: "/health"},
	{name: "unknown", method: "GET", target: "/nope"},
}

// rawStatus sends one request over a fresh connection with exactly the
// given Host and Origin ("" for none) and returns the response's status
// and body (for a 101, whatever arrived first).
func rawStatus(t *testing.T, addr string, rt rebindRoute, host, origin string, hdr ...string) (int, string) {
	t.Helper()
	status, _, body := rawRequest(t, addr, rt, host, origin, hdr...)
	return status, body
}

// rawResponse is rawRequest from localhost without an Origin.
func rawResponse(t *testing.T, addr string, rt rebindRoute, hdr ...string) (int, http.Header, string) {
	t.Helper()
	return rawRequest(t, addr, rt, "localhost", "", hdr...)
}

// rawRequest is rawStatus with the response's header.
func rawRequest(t *testing.T, addr string, rt rebindRoute, host, origin string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	req := rt.method + " " + rt.target + " HTTP/1.1\r\nHost: " + host + "\r\n"
	if origin != "" {
		req += "Origin: " + origin + "\r\n"
	}
	if rt.upgrade {
		req += "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
			"Sec-WebSocket-Key: " + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef")) + "\r\n"
	} else {
		req += "Connection: close\r\n"
	}
	if rt.body != "" {
		req += "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req += hdr[i] + ": " + hdr[i+1] + "\r\n"
	}
	req += "Content-Length: " + strconv.Itoa(len(rt.body)) + "\r\n\r\n" + rt.body
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s: %v", rt.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp.StatusCode, resp.Header, ""
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestRebindingEveryRoute: without a token, a request that reached the
// loopback listener under a foreign Host, or with a foreign Origin (a page
// whose name was rebound to 127.0.0.1), is refused with 403 on every
// route, before any upgrade; loopback names and AllowedHosts pass.
func TestRebindingEveryRoute(t *testing.T) {
	d := startDaemon(t, Config{AllowedHosts: []string{"Dev.Internal"}})
	port := d.addr[strings.LastIndexByte(d.addr, ':')+1:]
	refused := []struct{ host, origin string }{
		{"attacker.example:" + port, "http://attacker.example:" + port}, // the rebound page: Origin == Host
		{"attacker.example:" + port, ""},
		{"127.0.0.1:" + port, "http://attacker.example"},
		{"localhost:" + port, "null"},
	}
	accepted := []struct{ host, origin string }{
		{"127.0.0.1:" + port, ""},
		{"localhost:" + port, "http://localhost:5173"},
		{"[::1]:" + port, ""},
		{"dev.internal:" + port, "https://dev.internal"},
	}
	for _, rt := range rebindRoutes {
		for _, c := range refused {
			status, body := rawStatus(t, d.addr, rt, c.host, c.origin)
			if status != http.StatusForbidden {
				t.Errorf("%s host %q origin %q: %d %s, want 403", rt.name, c.host, c.origin, status, body)
			} else if !strings.Contains(body, "Invalid Host") && !strings.Contains(body, "Invalid Origin") &&
				!strings.Contains(body, "Host header") {
				t.Errorf("%s: 403 body %s", rt.name, body)
			}
		}
		for _, c := range accepted {
			status, body := rawStatus(t, d.addr, rt, c.host, c.origin)
			if status == http.StatusForbidden || status >= 500 || (rt.upgrade && status != http.StatusSwitchingProtocols) {
				t.Errorf("%s host %q origin %q: %d %s", rt.name, c.host, c.origin, status, body)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(d.RootDir(), "planted.txt")); err != nil {
		t.Error("the accepted write did not happen (test broken)")
	}
}

// TestRebindingWithToken: with a token the Host check is off (a client
// behind a local reverse proxy keeps working); the token is what protects
// every route, /ssh included.
func TestRebindingWithToken(t *testing.T) {
	d := startDaemon(t, Config{AuthToken: "tok"})
	for _, rt := range rebindRoutes {
		status, body := rawStatus(t, d.addr, rt, "api.example.com", "", "Authorization", "Bearer tok")
		if status == http.StatusForbidden || status == http.StatusUnauthorized || status >= 500 ||
			(rt.upgrade && status != http.StatusSwitchingProtocols) {
			t.Errorf("%s with token behind a proxy: %d %s", rt.name, status, body)
		}
	}
}

// TestCrossOriginOffLoopback: on a listener that is not loopback (where
// the Host is not checked), a browser's cross-site request without a token
// is still refused: nothing else would stop a page from opening a
// WebSocket to /ssh (WebSockets have no CORS preflight).
func TestCrossOriginOffLoopback(t *testing.T) {
	s, err := New(Config{RootDir: t.TempDir(), SSHHostKeyPath: testKeyPath(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lan := &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 3001}
	for _, rt := range rebindRoutes {
		for _, c := range []struct {
			origin string
			want   bool // accepted
		}{{"", true}, {"http://192.0.2.10:3001", true}, {"http://evil.example", false}} {
			req := httptest.NewRequest(rt.method, rt.target, strings.NewReader(rt.body))
			req.Host = "192.0.2.10:3001"
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, lan))
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			if rt.upgrade {
				req.Header.Set("Upgrade", "websocket")
				req.Header.Set("Connection", "Upgrade")
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if got := rec.Code != http.StatusForbidden; got != c.want {
				t.Errorf("%s origin %q: %d %s", rt.name, c.origin, rec.Code, rec.Body.String())
			}
		}
	}
}

// TestSSHRefusalsLogged: a refused /ssh upgrade (bad token, foreign
// Host, daemon full) is logged at INFO with the client's address.
func TestSSHRefusalsLogged(t *testing.T) {
	ssh := rebindRoute{name: "ssh", method: "GET", target: "/ssh", upgrade: true}
	d := startDaemon(t, Config{AuthToken: "tok", MaxSSHConns: 1})
	if code, _ := rawClose(t, d.addr, "/ssh?token=wrong"); code != wsnet.CloseUnauthorized {
		t.Fatalf("bad token: close %d", code)
	}
	// Hold the only connection slot, then ask for another.
	held := sshClientWhenFree(t, d, "?token=tok") // the refused one may still hold the slot
	if status, body := rawStatus(t, d.addr, ssh, "localhost", "", "Authorization", "Bearer tok"); status != http.StatusServiceUnavailable {
		t.Fatalf("full: %d %s", status, body)
	}
	held.Close()
	open := startDaemon(t, Config{})
	if status, _ := rawStatus(t, open.addr, ssh, "attacker.example", "http://attacker.example"); status != http.StatusForbidden {
		t.Fatalf("foreign host: %d", status)
	}
	for _, c := range []struct {
		d    *testDaemon
		want string
	}{
		{d, `level=INFO msg="daemon: /ssh refused" reason="invalid or missing token" remote=127.0.0.1:`},
		{d, `level=INFO msg="daemon: request refused" reason="daemon full: `},
		{open, `level=INFO msg="daemon: request refused" reason="Invalid Host header: attacker.example" method=GET path=/ssh remote=127.0.0.1:`},
	} {
		if !strings.Contains(c.d.log.String(), c.want) {
			t.Errorf("log lacks %s:\n%s", c.want, c.d.log.String())
		}
	}
	if strings.Contains(d.log.String(), "wrong") {
		t.Error("the presented token was logged")
	}
}
