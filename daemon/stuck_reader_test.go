package daemon

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// TestTenantStuckReaderGivesBack: a tenant asks for a large response and
// then reads nothing of it. Once a write of the response has waited
// responseWriteTimeout the request ends and gives its share back, so the
// tenant (at an mcpInFlight cap of 1) is served again while the connection
// is still open; before, the request held its share, its goroutine and its
// buffers for as long as the client kept the connection. A file download
// (sendfile through ReadFrom) and an MCP answer (one Write of 35 MB).
func TestTenantStuckReaderGivesBack(t *testing.T) {
	defer func(old time.Duration) { responseWriteTimeout = old }(responseWriteTimeout)
	responseWriteTimeout = 500 * time.Millisecond
	d := startTenantDaemon(t, Config{DisableSSHWS: true}, `{"mcpInFlight":1}`)
	dir := filepath.Join(d.RootDir(), "users/alice")
	line := strings.Repeat("a line of text ", 6) + "\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int{"big.txt": 40 << 20, "mid.txt": 3500 << 10} {
		if err := os.WriteFile(filepath.Join(dir, name), bytes.Repeat([]byte(line), size/len(line)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	host := strings.TrimPrefix(d.url, "http://")
	for _, c := range []struct{ name, request string }{
		{"download", "GET /v1/fs/file?path=big.txt HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + aliceTok + "\r\n\r\n"},
		{"mcp", func() string {
			// A 2025-03-26 batch: ten files of 3.5 MB, answered in one body.
			var calls []string
			for i := range 10 {
				calls = append(calls, `{"jsonrpc":"2.0","id":`+fmt.Sprint(i+1)+
					`,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"mid.txt"}}}`)
			}
			body := "[" + strings.Join(calls, ",") + "]"
			return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
				"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-03-26\r\nContent-Length: %d\r\n\r\n%s",
				host, aliceTok, len(body), body)
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			if status := testenv.StuckClient(t, d.url, c.request); !strings.Contains(status, " 200 ") {
				t.Fatalf("status %q", status)
			}
			// The client reads nothing more and keeps its connection.
			st, _, body := d.call(t, "GET", "/v1/fs/entries?path=.", aliceTok, "", nil)
			if st != 429 {
				t.Fatalf("alice while her stuck request runs: %d %s (the response was not held)", st, body)
			}
			waitFor(t, func() bool {
				st, _, _ := d.call(t, "GET", "/v1/fs/entries?path=.", aliceTok, "", nil)
				return st == 200
			})
		})
	}
}
