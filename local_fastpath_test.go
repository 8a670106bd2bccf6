package agentbe

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentbe/agent-backend/internal/beneath"
)

// TestReadDuringDirectorySwap: while a directory on the read path is
// swapped for a link leading out, back and forth, no read returns the
// canary's content (the fast path and its fallback both hold).
func TestReadDuringDirectorySwap(t *testing.T) {
	ws, canary := wsAndCanary(t, "d/f", "f")
	l, err := NewLocal(LocalConfig{RootDir: ws})
	mustOK(t, err)
	defer l.Destroy(context.Background())
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		d, link, aside := filepath.Join(ws, "d"), filepath.Join(ws, "d.link"), filepath.Join(ws, "d.real")
		mustOK(t, os.Symlink(canary, link))
		for !stop.Load() {
			os.Rename(d, aside)
			os.Rename(link, d) // d leads out
			os.Rename(d, link)
			os.Rename(aside, d)
		}
	}()
	ctx := context.Background()
	refused := 0
	for range 3000 {
		got, err := l.Read(ctx, "d/f")
		if err == nil && string(got) == "canary" {
			stop.Store(true)
			wg.Wait()
			t.Fatal("read the canary through a swapped directory")
		}
		if err != nil {
			refused++
		}
	}
	if refused == 0 {
		t.Error("the swap never showed: the test proved nothing")
	}
	stop.Store(true)
	wg.Wait()
}

// wsAndCanary makes a workspace holding inside ("inside") and, beside it,
// a canary directory holding secret ("canary").
func wsAndCanary(t *testing.T, inside, secret string) (ws, canary string) {
	t.Helper()
	base := t.TempDir()
	ws, canary = filepath.Join(base, "ws"), filepath.Join(base, "canary")
	mustOK(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, inside)), 0o755))
	mustOK(t, os.MkdirAll(canary, 0o755))
	mustOK(t, os.WriteFile(filepath.Join(ws, inside), []byte("inside"), 0o644))
	mustOK(t, os.WriteFile(filepath.Join(canary, secret), []byte("canary"), 0o644))
	return ws, canary
}

// withoutOpenat2 makes the openat2 fast paths decline for the rest of t,
// so that the os.Root paths behind them run.
func withoutOpenat2(t *testing.T) { t.Cleanup(beneath.Disable()) }
