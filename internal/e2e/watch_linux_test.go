//go:build linux

package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/watchtest"
)

var (
	until   = watchtest.Until
	changed = watchtest.Changed
	watchOf = watchtest.Open
)

// TestWatchRemoteSurfaces: a Remote's watcher (the daemon's SSE route)
// sees changes made through SFTP (the Remote's own writes), the daemon's
// /v1/fs file API, MCP tools over /mcp, commands run through SSH, and the
// host; then its TCP connection is killed while changes happen, and after
// the reconnection every one of them arrives, none lost.
func TestWatchRemoteSurfaces(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "tok")
	r := d.remote(t, func(c *agentbe.RemoteConfig) {
		c.Reconnect = agentbe.ReconnectConfig{InitialDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond, MaxRetries: 50}
	})
	w := watchOf(t, r, ".", agentbe.WatchOptions{})
	if !strings.HasSuffix(w.Cursor(), ":0") || w.ID() == "" {
		t.Fatalf("cursor of a new Remote watcher: %q", w.Cursor())
	}

	must(t, r.Write(ctx, "sftp.txt", []byte("sftp")))
	until(t, w, "SFTP write", changed("sftp.txt"))

	req, _ := http.NewRequest("PUT", "http://"+d.addr+"/v1/fs/file?path=v1.txt", strings.NewReader("v1"))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT /v1/fs/file: %d", resp.StatusCode)
	}
	until(t, w, "/v1/fs write", changed("v1.txt"))

	c, err := agentbe.MCPClient(ctx, r, agentbe.MCPOptions{})
	must(t, err)
	defer c.Close()
	res, err := c.CallTool(ctx, "write_file", map[string]any{"path": "mcp.txt", "content": "m"})
	if err != nil || res.IsError {
		t.Fatalf("write_file over /mcp: %v %+v", err, res)
	}
	until(t, w, "MCP write", changed("mcp.txt"))

	_, err = r.Exec(ctx, "echo x > cmd.txt", agentbe.ExecOptions{})
	must(t, err)
	until(t, w, "command write", changed("cmd.txt"))

	must(t, os.WriteFile(filepath.Join(d.root, "host.txt"), nil, 0o644))
	until(t, w, "host write", changed("host.txt"))

	// Kill every TCP connection of the daemon (the SSE stream's, the
	// SSH WebSocket's), change things while the watcher is cut off, and
	// expect each change after it reconnected.
	d.dropConns()
	for i := range 20 {
		must(t, os.WriteFile(filepath.Join(d.root, fmt.Sprintf("during%02d.txt", i)), nil, 0o644))
	}
	// Each file's creation is published at once (its write, coalesced,
	// 50 ms later): every one of the 20 created events must arrive, in
	// sequence, with no rescan.
	created := map[string]bool{}
	var seen []agentbe.ChangeEvent
	var last uint64
	for len(created) < 20 {
		seen = append(seen, until(t, w, "changes made while disconnected", func(agentbe.ChangeEvent) bool { return true })...)
		ev := seen[len(seen)-1]
		if ev.Kind == agentbe.ChangeRescan {
			t.Fatalf("resume lost events: %+v", ev)
		}
		if last != 0 && ev.Seq != last+1 {
			t.Fatalf("sequence gap %d → %d", last, ev.Seq)
		}
		last = ev.Seq
		if ev.Kind == agentbe.ChangeCreated && strings.HasPrefix(ev.Path, "during") {
			created[ev.Path] = true
		}
		if ev.Kind == agentbe.ChangeWritten && strings.HasPrefix(ev.Path, "during") && !created[ev.Path] {
			t.Fatalf("%s written but its creation was lost across the reconnection: %v", ev.Path, seen)
		}
	}

	// A new Remote watcher resumes from the first one's cursor, and
	// Since answers from what it received.
	cur := w.Cursor()
	must(t, os.WriteFile(filepath.Join(d.root, "later.txt"), nil, 0o644))
	w2 := watchOf(t, r, ".", agentbe.WatchOptions{Cursor: cur})
	until(t, w2, "resumed from a cursor", changed("later.txt"))
	if evs, err := w2.Since(last); err != nil || len(evs) == 0 {
		t.Fatalf("Since(%d) = %v, %v", last, evs, err)
	}
}
