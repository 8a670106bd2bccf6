package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/mcp"
)

// BenchmarkMCPReadHTTP compares the daemon's /mcp (auth, root and scope
// checks, limiter, access log) with the bare mcp HTTP handler on the same
// workspace, in process: the difference is what the daemon's wiring costs
// per request (issue 13: ≥ 90% of mcpbench's throughput).
func BenchmarkMCPReadHTTP(b *testing.B) {
	root := b.TempDir()
	os.WriteFile(filepath.Join(root, "read1k.txt"), []byte(strings.Repeat("x", 1023)+"\n"), 0o644)
	body := toolCall("read_text_file", `{"path":"read1k.txt"}`)
	s, err := New(Config{RootDir: root, AuthToken: "t0k", DisableSSHWS: true, Isolation: agentbe.IsolationNone,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	bare := mcp.NewHTTPHandler(func(*http.Request) (*mcp.Server, func(), error) { return agentbe.NewMCPServer(s.local), nil, nil }, mcp.HTTPOptions{})
	for _, c := range []struct {
		name string
		h    http.Handler
		hdr  map[string]string
	}{
		{"bare", bare, nil},
		{"daemon", s.Handler(), map[string]string{"Authorization": "Bearer t0k"}},
		{"daemon-scoped", s.Handler(), map[string]string{"Authorization": "Bearer t0k", "X-Scope-Path": "s"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			if c.hdr["X-Scope-Path"] != "" {
				os.MkdirAll(filepath.Join(root, "s"), 0o755)
				os.WriteFile(filepath.Join(root, "s", "read1k.txt"), []byte(strings.Repeat("x", 1023)+"\n"), 0o644)
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					for k, v := range c.hdr {
						req.Header.Set(k, v)
					}
					w := httptest.NewRecorder()
					c.h.ServeHTTP(w, req)
					if w.Code != 200 {
						b.Fatalf("status %d %s", w.Code, w.Body.String())
					}
				}
			})
		})
	}
}

// BenchmarkSFTPOverWS moves 64 MiB through /ssh (WebSocket, SSH, sftpjail)
// with the pipelining sftpjail client, in process: get and put.
func BenchmarkSFTPOverWS(b *testing.B) {
	const size = 64 << 20
	d := startDaemon(&testing.T{}, Config{RootDir: b.TempDir(), SSHHostKeyPath: benchKeyPath(b), Isolation: agentbe.IsolationNone,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer d.stop()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 31)
	}
	os.WriteFile(filepath.Join(d.RootDir(), "big.bin"), data, 0o644)
	cl := benchSFTP(b, d)
	ctx := context.Background()
	b.Run("get", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			f, err := cl.Open(ctx, "big.bin")
			if err != nil {
				b.Fatal(err)
			}
			if n, err := f.WriteTo(io.Discard); err != nil || n != size {
				b.Fatal(n, err)
			}
			f.Close()
		}
	})
	b.Run("put", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			f, err := cl.Create(ctx, "up.bin")
			if err != nil {
				b.Fatal(err)
			}
			if n, err := f.ReadFrom(bytes.NewReader(data)); err != nil || n != size {
				b.Fatal(n, err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSSHExecTrue runs `true` through an SSH exec channel on one
// SSH-over-WebSocket connection, next to the same command through
// Local.Exec directly: the difference is the SSH session's cost.
func BenchmarkSSHExecTrue(b *testing.B) {
	d := startDaemon(&testing.T{}, Config{RootDir: b.TempDir(), SSHHostKeyPath: benchKeyPath(b), Isolation: agentbe.IsolationSoftware,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer d.stop()
	c := benchSSHClient(b, d)
	b.Run("ssh", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s, err := c.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Run("true"); err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
	b.Run("local", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := d.local.Exec(context.Background(), "true", agentbe.ExecOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAccessLog is what the access log costs a request: a line
// formatted (a handler at Debug, as every 200 was before it moved to Debug)
// against the line skipped (the default Info level).
func BenchmarkAccessLog(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	for _, c := range []struct {
		name  string
		level slog.Level
	}{{"formatted", slog.LevelDebug}, {"skipped", slog.LevelInfo}} {
		b.Run(c.name, func(b *testing.B) {
			h := accessLog(&panicLog{log: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: c.level}))}, ok)
			req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		})
	}
}
