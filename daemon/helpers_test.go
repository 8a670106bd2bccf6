package daemon

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/wsnet"
	"github.com/agentbe/agent-backend/sftpjail"
	"golang.org/x/crypto/ssh"
)

// testKeyPath writes an ed25519 host key (fast to make) into a temp dir.
func testKeyPath(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "hostkey")
	if err := os.WriteFile(p, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testDaemon is a Server serving on 127.0.0.1.
type testDaemon struct {
	*Server
	url  string // http://127.0.0.1:port
	addr string
	log  *syncBuffer
	stop func() // shuts down and waits for Serve to return
}

// startDaemon serves cfg (RootDir defaults to a temp dir, the host key to a
// fresh ed25519 key) until the test ends.
func startDaemon(t *testing.T, cfg Config) *testDaemon {
	t.Helper()
	if cfg.RootDir == "" {
		cfg.RootDir = t.TempDir()
	}
	if cfg.SSHHostKeyPath == "" {
		cfg.SSHHostKeyPath = testKeyPath(t)
	}
	if cfg.Isolation == "" {
		cfg.Isolation = "auto"
	}
	logBuf := &syncBuffer{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logBuf, nil))
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 3 * time.Second
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Error("Serve did not return after cancel")
			}
			s.Close()
		})
	}
	t.Cleanup(stop)
	return &testDaemon{Server: s, url: "http://" + ln.Addr().String(), addr: ln.Addr().String(), log: logBuf, stop: stop}
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// toolCall is a tools/call request body.
func toolCall(name, args string) string {
	return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
}

// post sends a POST /mcp with body and headers (name, value pairs).
func (d *testDaemon) post(t *testing.T, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, d.url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

func benchKeyPath(b *testing.B) string {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	blk, _ := ssh.MarshalPrivateKey(priv, "")
	p := filepath.Join(b.TempDir(), "hostkey")
	os.WriteFile(p, pem.EncodeToMemory(blk), 0o600)
	return p
}

// benchSSHClient connects an SSH client through /ssh with the WebSocket
// client the Remote backend uses (x/net's masks byte by byte and would
// measure itself rather than the daemon).
func benchSSHClient(b *testing.B, d *testDaemon) *ssh.Client {
	ws, err := wsnet.Dial(context.Background(), "ws://"+d.addr+"/ssh", wsnet.DialConfig{})
	if err != nil {
		b.Fatal(err)
	}
	conn, chans, reqs, err := ssh.NewClientConn(ws, "daemon", &ssh.ClientConfig{User: "a",
		HostKeyCallback: ssh.InsecureIgnoreHostKey()})
	if err != nil {
		b.Fatal(err)
	}
	c := ssh.NewClient(conn, chans, reqs)
	b.Cleanup(func() { c.Close() })
	return c
}

// benchSFTP opens an SFTP client through /ssh.
func benchSFTP(b *testing.B, d *testDaemon) *sftpjail.Client {
	return sftpSession(b, benchSSHClient(b, d))
}

// sftpSession opens the sftp subsystem in a new session of c.
func sftpSession(tb testing.TB, c *ssh.Client) *sftpjail.Client {
	tb.Helper()
	s, err := c.NewSession()
	if err != nil {
		tb.Fatal(err)
	}
	w, _ := s.StdinPipe()
	r, _ := s.StdoutPipe()
	if err := s.RequestSubsystem("sftp"); err != nil {
		tb.Fatal(err)
	}
	cl, err := sftpjail.NewClient(struct {
		io.Reader
		io.WriteCloser
	}{r, w})
	if err != nil {
		tb.Fatal(err)
	}
	return cl
}
