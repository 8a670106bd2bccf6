package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/daemon"
	"github.com/agentbe/agent-backend/internal/testenv"
)

// proxyDaemon serves a daemon in this process on a loopback port with
// token "good" and returns its address.
func proxyDaemon(t *testing.T, maxSSH int) string {
	t.Helper()
	s, err := daemon.New(daemon.Config{RootDir: t.TempDir(), AuthToken: "good", Isolation: "none",
		SSHHostKeyPath: filepath.Join(t.TempDir(), "key"), MaxSSHConns: maxSSH,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done; s.Close() })
	return ln.Addr().String()
}

func tokenFile(t *testing.T, tok string) string {
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// proxySession is a running ssh-proxy whose stdin the test holds open.
type proxySession struct {
	stdin  *io.PipeWriter
	stdout *bufio.Reader
	stderr *strings.Builder
	code   chan int
}

func startProxy(args ...string) *proxySession {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &proxySession{stdin: inW, stdout: bufio.NewReader(outR), stderr: &strings.Builder{}, code: make(chan int, 1)}
	go func() {
		code := runSSHProxy(args, inR, outW, p.stderr)
		outW.Close()
		p.code <- code
	}()
	return p
}

func (p *proxySession) wait(t *testing.T) int {
	t.Helper()
	go io.Copy(io.Discard, p.stdout) // a proxy still writing must not block
	select {
	case c := <-p.code:
		return c
	case <-time.After(30 * time.Second):
		t.Fatal("ssh-proxy did not exit")
		return 0
	}
}

// TestSSHProxyFailuresAreReported: every way of not reaching the daemon's
// SSH server ends ssh-proxy with a message on stderr and a non-zero exit
// (it used to exit 0 in silence on a refused token, leaving OpenSSH to say
// only kex_exchange_identification); a good session exits 0 in silence.
func TestSSHProxyFailuresAreReported(t *testing.T) {
	addr := proxyDaemon(t, 1)
	url := "ws://" + addr + "/ssh"

	refusedPort := strconv.Itoa(testenv.FreePort(t))
	fails := func(name, want string, args ...string) {
		t.Helper()
		p := startProxy(args...)
		p.stdin.Close()
		code := p.wait(t)
		if code == 0 || !strings.Contains(p.stderr.String(), want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", name, code, p.stderr, want)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"wrong token", []string{"--url", url, "--token-file", tokenFile(t, "bad")}, "the daemon refused the token"},
		{"no token", []string{"--url", url}, "the daemon refused the token"},
		{"token in the URL", []string{"--url", url + "?token=bad"}, "the daemon refused the token"},
		{"not listening", []string{"--url", "ws://127.0.0.1:" + refusedPort + "/ssh"}, "cannot reach the daemon at 127.0.0.1:" + refusedPort},
		{"wrong path", []string{"--url", "ws://" + addr + "/nope"}, "HTTP 404"},
		{"not a ws URL", []string{"--url", "http://" + addr + "/ssh"}, "--url must be a ws:// or wss:// URL"},
		{"no URL", nil, "--url must be"},
		{"token file missing", []string{"--url", url, "--token-file", filepath.Join(t.TempDir(), "none")}, "--token-file"},
	} {
		fails(c.name, c.want, c.args...)
	}

	good := startProxy("--url", url, "--token-file", tokenFile(t, "good"))
	banner, err := good.stdout.ReadString('\n')
	if err != nil || !strings.HasPrefix(banner, "SSH-2.0-") {
		t.Fatalf("no SSH banner through the proxy: %q %v (stderr %q)", banner, err, good.stderr)
	}
	// The good session holds the daemon's only SSH slot.
	fails("daemon full", "the daemon is full (HTTP 503", "--url", url, "--token-file", tokenFile(t, "good"))

	good.stdin.Close() // the client is done
	if code := good.wait(t); code != 0 || good.stderr.String() != "" {
		t.Errorf("good session: exit %d, stderr %q", code, good.stderr)
	}
}

// TestOpenSSHShowsRefusedToken: real OpenSSH through ssh-proxy with a wrong
// token prints the proxy's reason, not only kex_exchange_identification.
func TestOpenSSHShowsRefusedToken(t *testing.T) {
	bin := cliBinary(t)
	d, _ := startDaemonBinary(t, bin)
	os.WriteFile(d.tokenFile, []byte("wrong\n"), 0o600)
	out, code := openSSH(t, d, "ssh", "", "agent@daemon", "true")
	if code == 0 || !strings.Contains(out, "the daemon refused the token") {
		t.Errorf("ssh with a wrong token: exit %d: %s", code, out)
	}
	os.Remove(d.tokenFile)
	out, code = openSSH(t, d, "ssh", "", "agent@daemon", "true")
	if code == 0 || !strings.Contains(out, "--token-file") {
		t.Errorf("ssh with a missing token file: exit %d: %s", code, out)
	}
}
