package daemon

import (
	"bytes"
	"context"
	"encoding/pem"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/agentbe/agent-backend/internal/testenv"
)

func TestHostKeyGeneratePersistReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "dir", "ssh_host_ed25519_key")
	var logBuf syncBuffer
	k1, err := LoadOrCreateHostKey(path, newTestLogger(&logBuf))
	if err != nil {
		t.Fatal(err)
	}
	if k1.PublicKey().Type() != "ssh-rsa" {
		t.Errorf("key type %s", k1.PublicKey().Type())
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Errorf("key dir mode %v", di.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	blk, _ := pem.Decode(data)
	if blk == nil || blk.Type != "RSA PRIVATE KEY" {
		t.Fatalf("not PKCS#1 PEM: %.40q", data)
	}
	k2, err := LoadOrCreateHostKey(path, newTestLogger(&logBuf))
	if err != nil || !bytes.Equal(k1.PublicKey().Marshal(), k2.PublicKey().Marshal()) {
		t.Errorf("reload gave another key: %v", err)
	}
	if logBuf.String() != "" {
		t.Errorf("unexpected log: %s", logBuf.String())
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("temp files left: %v", ents)
	}
}

func TestHostKeyUnsavable(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o644)
	var logBuf syncBuffer
	k, err := LoadOrCreateHostKey(filepath.Join(blocker, "key"), newTestLogger(&logBuf))
	if err != nil || k == nil {
		t.Fatalf("unsavable key must still be used: %v", err)
	}
	if !strings.Contains(logBuf.String(), "level=WARN") || !strings.Contains(logBuf.String(), "in memory") {
		t.Errorf("no warning: %s", logBuf.String())
	}
}

func TestHostKeyInvalidFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "key")
	os.WriteFile(p, []byte("not a key"), 0o600)
	if _, err := LoadOrCreateHostKey(p, nil); err == nil {
		t.Error("garbage accepted as a host key")
	}
	if b, _ := os.ReadFile(p); string(b) != "not a key" {
		t.Error("the invalid key file was replaced")
	}
}

func TestRunWarnsWithoutTokenOnPublicBind(t *testing.T) {
	for _, c := range []struct {
		host, token string
		warn        bool
	}{{"", "", true}, {"127.0.0.1", "", false}, {"", "tok", false}} {
		// A port taken on all interfaces: Run fails after the warning.
		busy, err := net.Listen("tcp", ":0")
		if err != nil {
			t.Fatal(err)
		}
		port := busy.Addr().(*net.TCPAddr).Port
		var logBuf syncBuffer
		ctx, cancel := contextWithCancel()
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, Config{RootDir: t.TempDir(), Host: c.host, Port: port, AuthToken: c.token,
				SSHHostKeyPath: testKeyPath(t), Logger: newTestLogger(&logBuf)})
		}()
		err = <-done
		cancel()
		busy.Close()
		if err == nil {
			t.Errorf("%+v: Run on a busy port succeeded", c)
		}
		if got := strings.Count(logBuf.String(), "no auth token"); (got == 1) != c.warn || got > 1 {
			t.Errorf("%+v: %d warnings:\n%s", c, got, logBuf.String())
		}
	}
}

// TestHostKeyFingerprintLogged: the daemon logs its host key's fingerprint
// at start, exactly as `ssh-keygen -lf` prints it, for a generated RSA key
// (at a path named like the spec's default) and for an ed25519 key given;
// HostKey returns the same key.
func TestHostKeyFingerprintLogged(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	testenv.Require(t, err == nil, "ssh-keygen (OpenSSH)")
	for name, path := range map[string]string{
		"generated": filepath.Join(t.TempDir(), "ssh_host_ed25519_key"),
		"given":     testKeyPath(t),
	} {
		var logBuf syncBuffer
		s, err := New(Config{RootDir: t.TempDir(), SSHHostKeyPath: path, Logger: newTestLogger(&logBuf)})
		if err != nil {
			t.Fatal(err)
		}
		pub, err := s.HostKey(context.Background())
		s.Close()
		if err != nil {
			t.Fatalf("%s: HostKey: %v", name, err)
		}
		out, err := exec.Command(keygen, "-lf", path).Output()
		if err != nil {
			t.Fatalf("%s: ssh-keygen -lf: %v", name, err)
		}
		fields := strings.Fields(string(out)) // "2048 SHA256:… comment (RSA)"
		if len(fields) < 2 || fields[1] != ssh.FingerprintSHA256(pub) {
			t.Errorf("%s: ssh-keygen says %q, HostKey's fingerprint is %s", name, out, ssh.FingerprintSHA256(pub))
		}
		if want := "fingerprint=" + fields[1]; !strings.Contains(logBuf.String(), want) || !strings.Contains(logBuf.String(), "level=INFO") {
			t.Errorf("%s: log lacks %s:\n%s", name, want, logBuf.String())
		}
	}
	s, err := New(Config{RootDir: t.TempDir(), DisableSSHWS: true, Logger: newTestLogger(io.Discard)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.HostKey(context.Background()); err == nil {
		t.Error("HostKey with the SSH endpoint disabled returned a key")
	}
}
