package daemon

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// TestConventionalSSHD runs the real sshd on a high port through Run:
// users are created with passwords, the first gets the public key, a key
// login and a password login both work, /health reports ssh, shutdown
// stops sshd, and the test users are removed afterwards. sshd reads a test
// configuration (-f) that includes the drop-in the daemon writes, so the
// machine's own sshd configuration is not touched.
func TestConventionalSSHD(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test creates users: run it as root (CI does)")
	}
	dir := t.TempDir()
	users := []SSHUser{{"agentbe-t1", "pw-one"}, {"agentbe-t2", "pw two:x"}}
	t.Cleanup(func() {
		for _, u := range users {
			exec.Command("userdel", "-r", u.Name).Run()
		}
	})
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	sshPub, _ := ssh.NewPublicKey(pub)
	blk, _ := ssh.MarshalPrivateKey(priv, "")
	keyFile := filepath.Join(dir, "id")
	os.WriteFile(keyFile, pem.EncodeToMemory(blk), 0o600)
	dropIn := filepath.Join(dir, "sshd_config.d", "agentbe.conf")
	conf := filepath.Join(dir, "sshd_config")
	os.WriteFile(conf, []byte("Include "+dropIn+"\nHostKey /etc/ssh/ssh_host_ed25519_key\nPidFile none\nUsePAM yes\n"+
		"KbdInteractiveAuthentication no\nAuthorizedKeysFile .ssh/authorized_keys\n"), 0o644)
	sshPort := freeTCPPort(t)
	httpPort := freeTCPPort(t)
	var logBuf syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{RootDir: filepath.Join(dir, "ws"), Host: "127.0.0.1", Port: httpPort,
			SSHHostKeyPath: testKeyPath(t), Logger: newTestLogger(&logBuf),
			Conventional: &SSHDConfig{Port: sshPort, Users: users, PublicKey: string(ssh.MarshalAuthorizedKey(sshPub)),
				DropInPath: dropIn, ExtraArgs: []string{"-f", conf}}})
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v\n%s", err, logBuf.String())
			}
		case <-time.After(20 * time.Second):
			t.Error("Run did not return")
		}
	}()
	waitHTTP(t, httpPort, `"ssh":true`)

	u1, err := user.Lookup("agentbe-t1")
	if err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]os.FileMode{".ssh": 0o700, ".ssh/authorized_keys": 0o600} {
		fi, err := os.Stat(filepath.Join(u1.HomeDir, p))
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v", p, fi, err)
		}
	}
	if b, _ := os.ReadFile(dropIn); !strings.Contains(string(b), "PasswordAuthentication yes") {
		t.Errorf("drop-in: %q", b)
	}
	// The key works for the first user only; passwords work for both.
	askpass := filepath.Join(dir, "askpass.sh")
	os.WriteFile(askpass, []byte("#!/bin/sh\nprintf '%s\\n' \"$TEST_PW\"\n"), 0o755)
	run := func(args []string, env ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "/usr/bin/ssh", append([]string{"-F", "/dev/null", "-p", strconv.Itoa(sshPort),
			"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"}, args...)...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "DISPLAY=none"}, env...)
		cmd.Stdin = nil
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := waitSSHD(func() (string, error) {
		return run([]string{"-o", "BatchMode=yes", "-i", keyFile, "agentbe-t1@127.0.0.1", "whoami"})
	})
	if err != nil || strings.TrimSpace(out) != "agentbe-t1" {
		t.Errorf("key login: %q %v", out, err)
	}
	for _, u := range users {
		out, err = run([]string{"-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password",
			"-o", "NumberOfPasswordPrompts=1", u.Name + "@127.0.0.1", "whoami"},
			"SSH_ASKPASS="+askpass, "SSH_ASKPASS_REQUIRE=force", "TEST_PW="+u.Password)
		if err != nil || strings.TrimSpace(out) != u.Name {
			t.Errorf("password login %s: %q %v", u.Name, out, err)
		}
	}
	if strings.Contains(logBuf.String(), "pw-one") {
		t.Error("a password reached the log")
	}
}

// waitSSHD retries f while sshd is still starting.
func waitSSHD(f func() (string, error)) (string, error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, err := f()
		if err == nil || time.Now().After(deadline) || !strings.Contains(out, "Connection refused") {
			return out, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestSSHDExitEndsDaemon(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "sshd")
	os.WriteFile(fake, []byte("#!/bin/sh\nexit 3\n"), 0o755)
	err := Run(context.Background(), Config{RootDir: filepath.Join(dir, "ws"), Host: "127.0.0.1", Port: freeTCPPort(t),
		SSHHostKeyPath: testKeyPath(t), Logger: newTestLogger(io.Discard),
		Conventional: &SSHDConfig{SSHDPath: fake, DropInPath: filepath.Join(dir, "d", "x.conf")}})
	if !errors.Is(err, ErrSSHDExited) {
		t.Errorf("Run: %v", err)
	}
	err = Run(context.Background(), Config{RootDir: filepath.Join(dir, "ws"), Port: freeTCPPort(t),
		SSHHostKeyPath: testKeyPath(t), Logger: newTestLogger(io.Discard),
		Conventional: &SSHDConfig{SSHDPath: filepath.Join(dir, "missing")}})
	if !errors.Is(err, ErrSSHDUnavailable) {
		t.Errorf("missing sshd: %v", err)
	}
}

var freeTCPPort = testenv.FreePort

func waitHTTP(t *testing.T, port int, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/health")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), want) {
				return
			}
			t.Fatalf("health: %s", b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no /health: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
