package daemon

import (
	"bytes"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
