package daemon

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// BenchmarkMCPAudit measures MCP calls through the daemon's handler
// without an audit log and with one writing to a file: a write_file of
// 1 KiB (two records: the write and the tool call) and a read_text_file
// of 1 KiB (one record, the tool call), the daemon's fastest call.
func BenchmarkMCPAudit(b *testing.B) {
	write := toolCall("write_file", `{"path":"w.txt","content":"`+strings.Repeat("x", 1024)+`"}`)
	read := toolCall("read_text_file", `{"path":"r.txt"}`)
	for _, c := range []struct {
		name  string
		body  string
		audit bool
	}{{"write/no-audit", write, false}, {"write/audit-file", write, true},
		{"read/no-audit", read, false}, {"read/audit-file", read, true}} {
		body := c.body
		b.Run(c.name, func(b *testing.B) {
			cfg := Config{RootDir: b.TempDir(), AuthToken: "t0k", DisableSSHWS: true, Isolation: agentbe.IsolationNone,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if c.audit {
				f, err := os.Create(filepath.Join(b.TempDir(), "audit.jsonl"))
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				cfg.AuditLog = f
			}
			s, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			os.WriteFile(filepath.Join(s.RootDir(), "r.txt"), []byte(strings.Repeat("y", 1024)), 0o644)
			h := s.Handler()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					req.Header.Set("Authorization", "Bearer t0k")
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != 200 {
						b.Fatalf("status %d %s", w.Code, w.Body.String())
					}
				}
			})
		})
	}
}

// BenchmarkAuditRecord measures what auditing adds to one call on the
// request's goroutine: toolCalled (metrics, encoding the record, queueing
// it) with and without an audit log.
func BenchmarkAuditRecord(b *testing.B) {
	for _, audit := range []bool{false, true} {
		name := "no-audit"
		if audit {
			name = "audit-file"
		}
		b.Run(name, func(b *testing.B) {
			cfg := Config{RootDir: b.TempDir(), DisableSSHWS: true, Isolation: agentbe.IsolationNone,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if audit {
				f, err := os.Create(filepath.Join(b.TempDir(), "audit.jsonl"))
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				cfg.AuditLog = f
			}
			s, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			info := &requestInfo{ID: newRequestID(), Remote: "127.0.0.1:40000", Route: routeMCP}
			ctx := withRequestInfo(context.Background(), info)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					s.toolCalled(ctx, "read_text_file", false, 20*time.Microsecond)
				}
			})
		})
	}
}
