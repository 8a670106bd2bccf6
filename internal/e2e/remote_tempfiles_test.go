package e2e_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// tempFiles lists the names in dir that look like a Remote's temporary
// files for base (".base.*.tmp").
func tempFiles(t *testing.T, dir, base string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "."+base+".") && strings.HasSuffix(e.Name(), ".tmp") {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestRemoteRemovesLeftTempFilesOnReconnect: a write whose connection is
// killed mid-transfer leaves its temporary file on the daemon (it cannot
// remove it: the link is down); the Remote removes it once reconnected, and
// nothing else (a file of the same naming it did not leave stays).
func TestRemoteRemovesLeftTempFilesOnReconnect(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "t")
	r := d.remote(t, func(c *agentbe.RemoteConfig) {
		c.Reconnect = agentbe.ReconnectConfig{InitialDelay: 50 * time.Millisecond, MaxDelay: 200 * time.Millisecond, MaxRetries: 20}
		c.KeepaliveInterval = -1
	})
	dir := filepath.Join(d.root, "dir")
	must(t, os.MkdirAll(dir, 0o755))
	planted := filepath.Join(dir, ".big.bin.notours.tmp")
	must(t, os.WriteFile(planted, []byte("not the Remote's"), 0o644))

	// killMidTransfer starts a transfer with start, drops the daemon's
	// connections once the temporary file has data, and returns the
	// transfer's error and whether the drop came before it ended.
	killMidTransfer := func(start func() error) (error, bool) {
		must(t, r.Connect(ctx))
		errc := make(chan error, 1)
		go func() { errc <- start() }()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			select {
			case err := <-errc:
				return err, false
			default:
			}
			for _, name := range tempFiles(t, dir, "big.bin") {
				if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Size() > 0 && name != filepath.Base(planted) {
					d.dropConns()
					return <-errc, true
				}
			}
		}
		t.Fatal("no temporary file appeared")
		return nil, false
	}
	waitConnected := func() {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); r.Status() != agentbe.StatusConnected; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("not reconnected: %v", r.Status())
			}
		}
	}

	for name, start := range map[string]func() error{
		"Write": func() error { return r.Write(ctx, "dir/big.bin", make([]byte, 128<<20)) },
		"Create": func() error {
			w, err := r.Create(ctx, "dir/big.bin")
			if err != nil {
				return err
			}
			if _, err := io.Copy(w, &slowZeros{left: 256 << 20}); err != nil {
				w.Close()
				return err
			}
			return w.Close()
		},
	} {
		var err error
		killed := false
		for try := 0; try < 5 && !killed; try++ { // a Write may finish before the drop
			err, killed = killMidTransfer(start)
			if !killed {
				must(t, err)
				must(t, os.Remove(filepath.Join(dir, "big.bin")))
			}
		}
		if !killed {
			t.Fatalf("%s: never caught mid-transfer", name)
		}
		if agentbe.CodeOf(err) != agentbe.CodeConnectionClosed {
			t.Errorf("%s killed mid-transfer: %v", name, err)
		}
		waitConnected()
		if left := tempFiles(t, dir, "big.bin"); len(left) != 1 || left[0] != filepath.Base(planted) {
			t.Errorf("%s: temporary files after the reconnection: %v", name, left)
		}
		if _, err := os.Stat(filepath.Join(dir, "big.bin")); !os.IsNotExist(err) {
			t.Errorf("%s: the target exists after a killed transfer: %v", name, err)
		}
	}
}
