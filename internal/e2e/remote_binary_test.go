package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/testenv"
)

// buildCLI builds cmd/agent-backend once per test binary run.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agent-backend")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/agentbe/agent-backend/cmd/agent-backend")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// binaryDaemon runs our binary on a fixed loopback port.
type binaryDaemon struct {
	bin, root, tokenFile, key string
	port                      int
	cmd                       *exec.Cmd
}

func (d *binaryDaemon) start(t *testing.T) {
	t.Helper()
	d.cmd = exec.Command(d.bin, "daemon", "--rootDir", d.root, "--host", "127.0.0.1", "--port", strconv.Itoa(d.port),
		"--auth-token-file", d.tokenFile, "--isolation", "none", "--ssh-host-key", d.key)
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	url := "http://127.0.0.1:" + strconv.Itoa(d.port) + "/health"
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return
		}
	}
	t.Fatal("daemon binary did not answer /health")
}

func (d *binaryDaemon) kill() {
	if d.cmd != nil && d.cmd.Process != nil {
		d.cmd.Process.Signal(syscall.SIGKILL)
		d.cmd.Wait()
		d.cmd = nil
	}
}

// TestRemoteBinaryKilledMidTransfer: our daemon binary is SIGKILLed while a
// 64 MiB write and a read are in flight; both fail within a second with
// CONNECTION_CLOSED and the target file is untouched; restarted, the
// backend reconnects by itself.
func TestRemoteBinaryKilledMidTransfer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	port := testenv.FreePort(t)
	d := &binaryDaemon{bin: buildCLI(t), root: filepath.Join(dir, "ws"), tokenFile: filepath.Join(dir, "token"),
		key: filepath.Join(dir, "hostkey"), port: port}
	must(t, os.MkdirAll(d.root, 0o755))
	must(t, os.WriteFile(d.tokenFile, []byte("bin-token-of-the-remote-binary-test\n"), 0o600))
	hostKey := writeHostKey(t, d.key)
	d.start(t)
	defer d.kill()
	r, err := agentbe.NewRemote(agentbe.RemoteConfig{RootDir: d.root, Host: "127.0.0.1", Port: port, Token: "bin-token-of-the-remote-binary-test",
		HostKeyCallback: pinKey(t, hostKey), KeepaliveInterval: -1,
		Reconnect: agentbe.ReconnectConfig{InitialDelay: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond, MaxRetries: 20}})
	must(t, err)
	defer r.Destroy(ctx)
	must(t, r.Write(ctx, "target.bin", []byte("old content")))
	must(t, os.WriteFile(filepath.Join(d.root, "big-src"), bytes.Repeat([]byte{1}, 64<<20), 0o644))

	w, err := r.Create(ctx, "target.bin")
	must(t, err)
	writeErr := make(chan error, 1)
	go func() {
		_, err := io.Copy(w, &slowZeros{left: 256 << 20})
		if err == nil {
			err = w.Close()
		}
		writeErr <- err
	}()
	rc, err := r.Open(ctx, "big-src")
	must(t, err)
	readErr := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, &slowReader{rc}); readErr <- err }()
	execErr := make(chan error, 1)
	go func() { _, err := r.Exec(ctx, "sleep 3", agentbe.ExecOptions{}); execErr <- err }()
	time.Sleep(100 * time.Millisecond)
	killed := time.Now()
	d.kill()
	for name, ch := range map[string]chan error{"write": writeErr, "read": readErr, "exec": execErr} {
		select {
		case err := <-ch:
			if agentbe.CodeOf(err) != agentbe.CodeConnectionClosed || !errors.Is(err, agentbe.ErrConnectionClosed) {
				t.Errorf("%s: %v, want CONNECTION_CLOSED", name, err)
			}
		case <-time.After(time.Until(killed.Add(time.Second))):
			t.Fatalf("%s still pending 1 s after the kill", name)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(d.root, "target.bin")); string(b) != "old content" {
		t.Fatalf("target torn: %d bytes", len(b))
	}
	d.start(t)
	deadline := time.Now().Add(10 * time.Second)
	for r.Status() != agentbe.StatusConnected && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if b, err := r.Read(ctx, "target.bin"); err != nil || string(b) != "old content" {
		t.Fatalf("after restart: %q %v (status %v)", b, err, r.Status())
	}
}

// slowZeros yields zeros in 1 MiB pieces with a pause, so the transfer is
// still running when the daemon is killed.
type slowZeros struct{ left int }

func (s *slowZeros) Read(p []byte) (int, error) {
	if s.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), s.left, 1<<20)
	clear(p[:n])
	s.left -= n
	time.Sleep(5 * time.Millisecond)
	return n, nil
}

type slowReader struct{ r io.Reader }

func (s *slowReader) Read(p []byte) (int, error) {
	time.Sleep(5 * time.Millisecond)
	return s.r.Read(p[:min(len(p), 1<<20)])
}
