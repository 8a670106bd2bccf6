package e2e_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	agentbe "github.com/agentbe/agent-backend"
)

func newPublicKey(t *testing.T) ssh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	k, err := ssh.NewPublicKey(pub)
	must(t, err)
	return k
}

// writeHostKey saves a new RSA-2048 host key at path in PKCS#1 PEM (what
// our daemon and the reference's generate, so either loads it) and returns
// its public half, for tests that start a daemon binary and pin its key.
func writeHostKey(t *testing.T, path string) ssh.PublicKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	must(t, os.WriteFile(path, pemBytes, 0o600))
	pub, err := ssh.NewPublicKey(&key.PublicKey)
	must(t, err)
	return pub
}

// pinKey is a host key callback accepting only pub.
func pinKey(t *testing.T, pub ssh.PublicKey) ssh.HostKeyCallback {
	t.Helper()
	cb, err := agentbe.HostKeyFingerprint(ssh.FingerprintSHA256(pub))
	must(t, err)
	return cb
}

var testRemoteAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3001}

// TestNewRemoteRequiresHostKeyCallback: no callback is a configuration
// error that says how to pin the key; an explicit InsecureIgnoreHostKey is
// accepted.
func TestNewRemoteRequiresHostKeyCallback(t *testing.T) {
	_, err := agentbe.NewRemote(agentbe.RemoteConfig{RootDir: "/w", Host: "127.0.0.1"})
	if !errors.Is(err, agentbe.ErrNoHostKeyCallback) || !errors.Is(err, agentbe.ErrInvalidConfig) ||
		agentbe.CodeOf(err) != agentbe.CodeInvalidConfiguration {
		t.Fatalf("NewRemote without HostKeyCallback: %v", err)
	}
	for _, hint := range []string{"HostKeyFingerprint", "HostKeyFromKnownHosts", "agent-backend hostkey", "ssh.InsecureIgnoreHostKey()"} {
		if !strings.Contains(err.Error(), hint) {
			t.Errorf("the error does not mention %s: %v", hint, err)
		}
	}
	r, err := agentbe.NewRemote(agentbe.RemoteConfig{RootDir: "/w", Host: "127.0.0.1", HostKeyCallback: ssh.InsecureIgnoreHostKey()})
	must(t, err)
	r.Destroy(context.Background())
}

func TestHostKeyFingerprint(t *testing.T) {
	key, other := newPublicKey(t), newPublicKey(t)
	fp := ssh.FingerprintSHA256(key)
	for _, bad := range []string{"", "MD5:" + ssh.FingerprintLegacyMD5(key), strings.TrimPrefix(fp, "SHA256:"),
		"SHA256:abc", "SHA256:" + strings.Repeat("!", 43)} {
		if _, err := agentbe.HostKeyFingerprint(bad); !errors.Is(err, agentbe.ErrInvalidConfig) {
			t.Errorf("fingerprint %q: %v", bad, err)
		}
	}
	if _, err := agentbe.HostKeyFingerprint(); !errors.Is(err, agentbe.ErrInvalidConfig) {
		t.Errorf("no fingerprint: %v", err)
	}
	for _, form := range []string{fp, fp + "=", " " + fp + "\n"} { // padded, or pasted with spaces
		cb, err := agentbe.HostKeyFingerprint(form)
		must(t, err)
		if err := cb("h:3001", testRemoteAddr, key); err != nil {
			t.Errorf("%q refused its own key: %v", form, err)
		}
	}
	cb, err := agentbe.HostKeyFingerprint(ssh.FingerprintSHA256(other), fp) // a rotation: either key
	must(t, err)
	if err := cb("h:3001", testRemoteAddr, key); err != nil {
		t.Errorf("second fingerprint: %v", err)
	}
	cb, err = agentbe.HostKeyFingerprint(fp)
	must(t, err)
	err = cb("daemon.example:3001", testRemoteAddr, other)
	if !errors.Is(err, agentbe.ErrHostKeyRefused) {
		t.Fatalf("wrong key: %v", err)
	}
	for _, part := range []string{"daemon.example:3001", ssh.FingerprintSHA256(other), fp} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("the refusal does not name %s: %v", part, err)
		}
	}
}

func TestHostKeyFromKnownHosts(t *testing.T) {
	key, other, revoked := newPublicKey(t), newPublicKey(t), newPublicKey(t)
	file := filepath.Join(t.TempDir(), "known_hosts")
	lines := "# agent-backend hostkey output starts with a comment\n" +
		knownhosts.Line([]string{"127.0.0.1:3001"}, key) + "\n" +
		knownhosts.Line([]string{"daemon.example"}, key) + "\n" +
		"@revoked * " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(revoked))) + "\n"
	must(t, os.WriteFile(file, []byte(lines), 0o600))
	cb, err := agentbe.HostKeyFromKnownHosts(file)
	must(t, err)
	for _, host := range []string{"127.0.0.1:3001", "daemon.example:22"} {
		if err := cb(host, testRemoteAddr, key); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	for _, c := range []struct {
		host string
		key  ssh.PublicKey
		want []string
	}{
		{"127.0.0.1:3001", other, []string{"[127.0.0.1]:3001", ssh.FingerprintSHA256(other), ssh.FingerprintSHA256(key), file + ":2"}},
		{"127.0.0.1:3002", key, []string{"[127.0.0.1]:3002", "is not in", file, "agent-backend hostkey"}},
		{"daemon.example:3001", key, []string{"[daemon.example]:3001", "is not in"}}, // the port counts
		{"127.0.0.1:3001", revoked, []string{"revoked", file + ":4"}},
	} {
		err := cb(c.host, testRemoteAddr, c.key)
		if !errors.Is(err, agentbe.ErrHostKeyRefused) {
			t.Errorf("%s: %v", c.host, err)
			continue
		}
		for _, part := range c.want {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("%s: the refusal does not name %s: %v", c.host, part, err)
			}
		}
	}
	if _, err := agentbe.HostKeyFromKnownHosts(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, agentbe.ErrInvalidConfig) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := agentbe.HostKeyFromKnownHosts(); !errors.Is(err, agentbe.ErrInvalidConfig) {
		t.Errorf("no file: %v", err)
	}
}

// TestRemoteHostKeyPinned connects to a real daemon with its key pinned by
// fingerprint and by a known_hosts line, and is refused, without retrying,
// with a wrong key.
func TestRemoteHostKeyPinned(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "tok")
	host, port := d.hostPort()
	pub := d.hostKey(t)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	must(t, os.WriteFile(kh, []byte(knownhosts.Line([]string{net.JoinHostPort(host, strconv.Itoa(port))}, pub)+"\n"), 0o600))
	byFile, err := agentbe.HostKeyFromKnownHosts(kh)
	must(t, err)
	byFP, err := agentbe.HostKeyFingerprint(ssh.FingerprintSHA256(pub))
	must(t, err)
	for name, cb := range map[string]ssh.HostKeyCallback{"fingerprint": byFP, "known_hosts": byFile} {
		r := d.remote(t, func(c *agentbe.RemoteConfig) { c.HostKeyCallback = cb })
		if err := r.Write(ctx, "pinned-"+name, []byte("ok")); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	wrong, err := agentbe.HostKeyFingerprint(ssh.FingerprintSHA256(newPublicKey(t)))
	must(t, err)
	r := d.remote(t, func(c *agentbe.RemoteConfig) { c.HostKeyCallback = wrong; fastReconnect(c) })
	log := recordStatus(r)
	err = r.Connect(ctx)
	if !errors.Is(err, agentbe.ErrHostKeyRefused) || agentbe.CodeOf(err) != agentbe.CodeInvalidConfiguration ||
		!strings.Contains(err.Error(), ssh.FingerprintSHA256(pub)) {
		t.Fatalf("wrong pinned key: %v (code %s)", err, agentbe.CodeOf(err))
	}
	waitStatus(t, log, "connecting,disconnected")

	// The daemon comes back with another key: the reconnection is refused
	// once and not retried.
	pinned := d.remote(t, func(c *agentbe.RemoteConfig) { c.HostKeyCallback = byFP; fastReconnect(c) })
	plog := recordStatus(pinned)
	must(t, pinned.Connect(ctx))
	d.kill()
	must(t, os.Remove(d.keyPath()))
	d.start()
	waitStatus(t, plog, "connecting,connected,disconnected,reconnecting,disconnected")
	time.Sleep(500 * time.Millisecond)
	if got := plog.get(); got != "connecting,connected,disconnected,reconnecting,disconnected" {
		t.Errorf("kept retrying against another key: %s", got)
	}
	if _, err := pinned.Read(ctx, "pinned-fingerprint"); !errors.Is(err, agentbe.ErrHostKeyRefused) {
		t.Errorf("read after the key changed: %v", err)
	}

	// A callback of the caller's own: its refusal is wrapped the same way.
	own := d.remote(t, func(c *agentbe.RemoteConfig) { c.HostKeyCallback = ssh.FixedHostKey(newPublicKey(t)) })
	if err := own.Connect(ctx); !errors.Is(err, agentbe.ErrHostKeyRefused) || agentbe.CodeOf(err) != agentbe.CodeInvalidConfiguration {
		t.Errorf("ssh.FixedHostKey with another key: %v", err)
	}
}
