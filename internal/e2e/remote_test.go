package e2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/daemon"
	"github.com/agentbe/agent-backend/internal/testenv"
)

// testDaemon is our daemon on a loopback port that a test can kill (every
// connection dropped at once, as when the process dies) and restart on the
// same port.
type testDaemon struct {
	t     testing.TB
	root  string
	token string
	addr  string
	iso   agentbe.Isolation

	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
	srv    *daemon.Server
	cancel context.CancelFunc
	done   chan struct{}
}

func startDaemon(t testing.TB, token string) *testDaemon {
	t.Helper()
	d := &testDaemon{t: t, root: t.TempDir(), token: token, addr: "127.0.0.1:0", iso: agentbe.IsolationNone}
	d.start()
	t.Cleanup(d.kill)
	return d
}

// startDaemons starts n daemons without a token (startDaemon).
func startDaemons(t testing.TB, n int) []*testDaemon {
	t.Helper()
	daemons := make([]*testDaemon, n)
	for i := range daemons {
		daemons[i] = startDaemon(t, "")
	}
	return daemons
}

// trackingListener records accepted connections so kill can drop them.
type trackingListener struct {
	net.Listener
	d *testDaemon
}

func (l trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.d.mu.Lock()
		l.d.conns = append(l.d.conns, c)
		l.d.mu.Unlock()
	}
	return c, err
}

func (d *testDaemon) start() {
	d.t.Helper()
	srv, err := daemon.New(daemon.Config{RootDir: d.root, AuthToken: d.token, Isolation: d.iso,
		Logger: slog.New(slog.DiscardHandler), MaxSSHConns: 2000,
		SSHHostKeyPath: d.keyPath()})
	if err != nil {
		d.t.Fatal(err)
	}
	var ln net.Listener
	for i := 0; i < 50; i++ { // the port of a killed daemon can take a moment to free
		if ln, err = net.Listen("tcp", d.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		d.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.mu.Lock()
	d.ln, d.srv, d.cancel, d.done, d.addr = ln, srv, cancel, make(chan struct{}), ln.Addr().String()
	done := d.done
	d.mu.Unlock()
	go func() {
		defer close(done)
		srv.Serve(ctx, trackingListener{ln, d})
	}()
}

// kill drops the listener and every connection without a goodbye.
func (d *testDaemon) kill() {
	d.mu.Lock()
	if d.ln == nil {
		d.mu.Unlock()
		return
	}
	d.ln.Close()
	for _, c := range d.conns {
		c.Close()
	}
	d.conns, d.ln = nil, nil
	cancel, done, srv := d.cancel, d.done, d.srv
	d.mu.Unlock()
	cancel()
	<-done
	srv.Close()
}

func (d *testDaemon) hostPort() (string, int) { return splitHostPort(d.addr) }

// dropConns closes every connection the daemon accepted so far, as a
// network failure would, and keeps it serving.
func (d *testDaemon) dropConns() {
	d.mu.Lock()
	conns := d.conns
	d.conns = nil
	d.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// keyPath is the daemon's host key file, beside its workspace: a restart
// keeps the key unless a test removes the file.
func (d *testDaemon) keyPath() string {
	return filepath.Join(filepath.Dir(d.root), "hostkey-"+filepath.Base(d.root))
}

// hostKey is the running daemon's public host key.
func (d *testDaemon) hostKey(t testing.TB) ssh.PublicKey {
	t.Helper()
	d.mu.Lock()
	srv := d.srv
	d.mu.Unlock()
	pub, err := srv.HostKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// pinned is a host key callback accepting only the running daemon's key.
func (d *testDaemon) pinned(t testing.TB) ssh.HostKeyCallback {
	t.Helper()
	cb, err := agentbe.HostKeyFingerprint(ssh.FingerprintSHA256(d.hostKey(t)))
	if err != nil {
		t.Fatal(err)
	}
	return cb
}

// splitHostPort splits a "host:port" the tests made themselves.
func splitHostPort(addr string) (string, int) {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return host, p
}

func (d *testDaemon) remote(t testing.TB, mod func(*agentbe.RemoteConfig)) *agentbe.Remote {
	t.Helper()
	host, port := d.hostPort()
	cfg := agentbe.RemoteConfig{RootDir: d.root, Host: host, Port: port, Token: d.token,
		HostKeyCallback: d.pinned(t), OperationTimeout: 20 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	r, err := agentbe.NewRemote(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Destroy(context.Background()) })
	return r
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRemoteFileOperations(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "s3cret")
	r := d.remote(t, nil)
	if r.Status() != agentbe.StatusDisconnected {
		t.Fatalf("initial status %v", r.Status())
	}
	must(t, r.Write(ctx, "a/b/c.txt", []byte("hello")))
	if r.Status() != agentbe.StatusConnected {
		t.Fatalf("status after first op %v", r.Status())
	}
	if b, _ := os.ReadFile(filepath.Join(d.root, "a/b/c.txt")); string(b) != "hello" {
		t.Fatalf("on disk: %q", b)
	}
	data, err := r.Read(ctx, "/a/b/c.txt")
	if err != nil || string(data) != "hello" {
		t.Fatalf("Read %q, %v", data, err)
	}
	if _, err := r.Read(ctx, "missing"); !errors.Is(err, fs.ErrNotExist) || agentbe.CodeOf(err) != agentbe.CodeReadFailed {
		t.Errorf("missing: %v", err)
	}
	if _, err := r.Read(ctx, "../x"); !errors.Is(err, agentbe.ErrPathEscape) {
		t.Errorf("escape: %v", err)
	}
	names, err := r.ReadDir(ctx, "a/b")
	if err != nil || strings.Join(names, ",") != "c.txt" {
		t.Errorf("ReadDir %v %v", names, err)
	}
	must(t, r.Mkdir(ctx, "x/y/z"))
	if ok, err := r.Exists(ctx, "x/y/z"); !ok || err != nil {
		t.Errorf("Exists %v %v", ok, err)
	}
	if ok, err := r.Exists(ctx, "nope"); ok || err != nil {
		t.Errorf("Exists(nope) %v %v", ok, err)
	}
	fi, err := r.Stat(ctx, "a/b/c.txt")
	if err != nil || fi.Size() != 5 || fi.IsDir() {
		t.Errorf("Stat %v %v", fi, err)
	}
	must(t, os.Symlink("c.txt", filepath.Join(d.root, "a/b/link")))
	if fi, err := r.Lstat(ctx, "a/b/link"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat %v %v", fi, err)
	}
	if rp, err := r.RealPath(ctx, "a/b/link"); err != nil || rp != filepath.Join(r.RootDir(), "a/b/c.txt") {
		t.Errorf("RealPath %q %v", rp, err)
	}
	must(t, r.Rename(ctx, "a/b/c.txt", "moved.txt"))
	must(t, r.Touch(ctx, "moved.txt"))
	if b, _ := r.Read(ctx, "moved.txt"); string(b) != "hello" {
		t.Errorf("Touch truncated: %q", b)
	}
	must(t, r.Touch(ctx, "new/t.txt"))
	if err := r.Remove(ctx, "x", agentbe.RemoveOptions{}); err == nil {
		t.Error("non-recursive remove of a tree succeeded")
	}
	must(t, r.Remove(ctx, "x", agentbe.RemoveOptions{Recursive: true}))
	must(t, r.Remove(ctx, "gone", agentbe.RemoveOptions{Force: true}))
	if err := r.Remove(ctx, "gone", agentbe.RemoveOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("remove missing: %v", err)
	}
	// Binary content intact, old mode kept by the atomic replace.
	bin := make([]byte, 70000)
	rand.Read(bin)
	must(t, os.WriteFile(filepath.Join(d.root, "tool.sh"), []byte("#!/bin/sh\n"), 0o755))
	must(t, r.Write(ctx, "tool.sh", bin))
	if got, err := r.Read(ctx, "tool.sh"); err != nil || !bytes.Equal(got, bin) {
		t.Errorf("binary round trip: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(d.root, "tool.sh")); fi.Mode().Perm() != 0o755 {
		t.Errorf("mode after replace %v", fi.Mode())
	}
	ents, _ := os.ReadDir(d.root)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestRemoteStreaming64MiB(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "")
	r := d.remote(t, nil)
	const size = 64 << 20
	src := make([]byte, size)
	rand.Read(src)
	w, err := r.Create(ctx, "big.bin")
	must(t, err)
	if _, err := io.Copy(w, bytes.NewReader(src)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d.root, "big.bin")); err == nil {
		t.Fatal("target visible before Close")
	}
	must(t, w.Close())
	rc, err := r.Open(ctx, "big.bin")
	must(t, err)
	var got bytes.Buffer
	if _, err := io.Copy(&got, rc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if !bytes.Equal(got.Bytes(), src) {
		t.Fatal("64 MiB round trip differs")
	}
	// A cancelled writer leaves the old content.
	cctx, cancel := context.WithCancel(ctx)
	w, err = r.Create(cctx, "big.bin")
	must(t, err)
	w.Write([]byte("partial"))
	cancel()
	if err := w.Close(); err == nil {
		t.Error("Close after cancel succeeded")
	}
	if fi, _ := os.Stat(filepath.Join(d.root, "big.bin")); fi.Size() != size {
		t.Errorf("cancelled writer changed the file: %d bytes", fi.Size())
	}
}

func TestRemoteExec(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "tok")
	r := d.remote(t, func(c *agentbe.RemoteConfig) { c.Env = map[string]string{"FROM_CFG": "cfg"} })
	must(t, r.Mkdir(ctx, "sub dir"))
	out, err := r.Exec(ctx, `echo "$FROM_CFG $CALL"; pwd; printenv HOME`,
		agentbe.ExecOptions{Dir: "sub dir", Env: map[string]string{"CALL": "it's"}})
	want := "cfg it's\n" + d.root + "/sub dir\n" + d.root + "/sub dir\n"
	if err != nil || string(out) != want {
		t.Fatalf("Exec = %q, %v; want %q", out, err, want)
	}
	bin, err := r.Exec(ctx, `printf '\000\001\377\376'`, agentbe.ExecOptions{})
	if err != nil || !bytes.Equal(bin, []byte{0, 1, 0xff, 0xfe}) {
		t.Errorf("binary output %q %v", bin, err)
	}
	_, err = r.Exec(ctx, "echo oops >&2; exit 3", agentbe.ExecOptions{})
	var xe *agentbe.ExitError
	if !errors.As(err, &xe) || xe.ExitCode != 3 || string(xe.Stderr) != "oops\n" {
		t.Errorf("exit 3: %v", err)
	}
	var so, se bytes.Buffer
	if _, err := r.Exec(ctx, "echo out; echo err >&2", agentbe.ExecOptions{Stdout: &so, Stderr: &se,
		Stdin: strings.NewReader("")}); err != nil || so.String() != "out\n" || se.String() != "err\n" {
		t.Errorf("streams %q %q %v", so.String(), se.String(), err)
	}
	in, err := r.Exec(ctx, "tr a-z A-Z", agentbe.ExecOptions{Stdin: strings.NewReader("abc")})
	if err != nil || string(in) != "ABC" {
		t.Errorf("stdin %q %v", in, err)
	}
	_, err = r.Exec(ctx, "kill -KILL $$", agentbe.ExecOptions{})
	if !errors.As(err, &xe) || xe.Signal != "KILL" || xe.ExitCode != -1 {
		t.Errorf("killed by a signal: %v (%+v)", err, xe)
	}
	if _, err := r.Exec(ctx, "rm -rf /", agentbe.ExecOptions{}); !errors.Is(err, agentbe.ErrDangerous) {
		t.Errorf("dangerous: %v", err)
	}
	// Cancellation closes the channel and the daemon kills the command.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = r.Exec(cctx, "sleep 2; touch late", agentbe.ExecOptions{})
	if err == nil || time.Since(start) > 1500*time.Millisecond {
		t.Errorf("cancel: %v after %v", err, time.Since(start))
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(d.root, "late")); err == nil {
		t.Error("cancelled command kept running")
	}
}

func TestRemoteScope(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "")
	r := d.remote(t, nil)
	s, err := r.Scope("users/alice", agentbe.ScopeOptions{Env: map[string]string{"WHO": "alice"}})
	must(t, err)
	must(t, s.Write(ctx, "notes.txt", []byte("n")))
	if _, err := os.Stat(filepath.Join(d.root, "users/alice/notes.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, "../bob/x"); !errors.Is(err, agentbe.ErrPathEscape) {
		t.Errorf("scope escape: %v", err)
	}
	out, err := s.Exec(ctx, `echo "$WHO"; pwd`, agentbe.ExecOptions{})
	if err != nil || string(out) != "alice\n"+d.root+"/users/alice\n" {
		t.Errorf("scoped exec %q %v", out, err)
	}
	if rp, err := s.RealPath(ctx, "notes.txt"); err != nil || rp != d.root+"/users/alice/notes.txt" {
		t.Errorf("scoped RealPath %q %v", rp, err)
	}
}

func TestRemoteUnauthorized(t *testing.T) {
	d := startDaemon(t, "right")
	r := d.remote(t, func(c *agentbe.RemoteConfig) { c.Token = "wrong" })
	err := r.Connect(context.Background())
	if !errors.Is(err, agentbe.ErrUnauthorized) || r.Status() != agentbe.StatusDisconnected {
		t.Fatalf("Connect with a wrong token: %v (status %v)", err, r.Status())
	}
}

// statusLog records a Remote's transitions.
type statusLog struct {
	mu  sync.Mutex
	seq []string
}

// recordStatus subscribes a new statusLog to r.
func recordStatus(r *agentbe.Remote) *statusLog {
	l := &statusLog{}
	r.OnStatusChange(l.record)
	return l
}

func (l *statusLog) record(old, new agentbe.Status) {
	l.mu.Lock()
	l.seq = append(l.seq, new.String())
	l.mu.Unlock()
}

func (l *statusLog) get() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.seq, ",")
}

func waitStatus(t *testing.T, l *statusLog, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if l.get() == want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("status sequence %q, want %q", l.get(), want)
}

func fastReconnect(c *agentbe.RemoteConfig) {
	c.Reconnect = agentbe.ReconnectConfig{InitialDelay: 50 * time.Millisecond, MaxDelay: 200 * time.Millisecond, MaxRetries: 3}
	c.KeepaliveInterval = -1
}

func TestRemoteReconnects(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "t")
	r := d.remote(t, fastReconnect)
	log := recordStatus(r)
	must(t, r.Write(ctx, "f", []byte("1")))
	waitStatus(t, log, "connecting,connected")

	// Killed mid-read: the pending read fails fast with CONNECTION_CLOSED.
	must(t, os.WriteFile(filepath.Join(d.root, "big"), make([]byte, 32<<20), 0o644))
	rc, err := r.Open(ctx, "big")
	must(t, err)
	errc := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, rc); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	killed := time.Now()
	d.kill()
	select {
	case err := <-errc:
		if err == nil {
			t.Log("read finished before the kill")
		}
	case <-time.After(time.Second):
		t.Fatal("pending read still waiting 1 s after the daemon died")
	}
	if _, err := r.Read(ctx, "f"); agentbe.CodeOf(err) != agentbe.CodeConnectionClosed {
		t.Errorf("op right after the loss: %v", err)
	}
	if time.Since(killed) > time.Second {
		t.Error("failures took more than 1 s")
	}
	d.start() // same port
	waitStatus(t, log, "connecting,connected,disconnected,reconnecting,connected")
	if b, err := r.Read(ctx, "f"); err != nil || string(b) != "1" {
		t.Fatalf("after reconnect: %q %v", b, err)
	}
	// Never restarted: 3 attempts, then disconnected for good.
	d.kill()
	waitStatus(t, log, "connecting,connected,disconnected,reconnecting,connected,disconnected,reconnecting,disconnected")
	time.Sleep(400 * time.Millisecond)
	if got := log.get(); !strings.HasSuffix(got, "reconnecting,disconnected") {
		t.Errorf("kept retrying: %s", got)
	}
}

func TestRemoteDestroyDuringBackoff(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "")
	r := d.remote(t, func(c *agentbe.RemoteConfig) {
		c.Reconnect = agentbe.ReconnectConfig{InitialDelay: 300 * time.Millisecond}
		c.KeepaliveInterval = -1
	})
	log := recordStatus(r)
	must(t, r.Connect(ctx))
	d.kill()
	waitStatus(t, log, "connecting,connected,disconnected")
	must(t, r.Destroy(ctx))
	d.start() // a retry that was not cancelled would reach it
	time.Sleep(500 * time.Millisecond)
	if got := log.get(); got != "connecting,connected,disconnected,destroyed" {
		t.Errorf("sequence %q", got)
	}
	d.mu.Lock()
	conns := len(d.conns)
	d.mu.Unlock()
	if conns != 0 {
		t.Errorf("%d connection attempts after Destroy", conns)
	}
	if _, err := r.Read(ctx, "x"); !errors.Is(err, agentbe.ErrDestroyed) {
		t.Errorf("after Destroy: %v", err)
	}
}

func TestRemoteKeepaliveDetectsStall(t *testing.T) {
	// A proxy that stops forwarding (a dead peer whose TCP stays open).
	d := startDaemon(t, "")
	front, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer front.Close()
	stop, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	go func() {
		for {
			c, err := front.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", d.addr)
			if err != nil {
				c.Close()
				return
			}
			pipe := func(dst, src net.Conn) {
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					select {
					case <-stop:
						<-release // hold everything, forward nothing
					default:
					}
					if n > 0 {
						dst.Write(buf[:n])
					}
					if err != nil {
						dst.Close()
						return
					}
				}
			}
			go pipe(b, c)
			go pipe(c, b)
		}
	}()
	host, p := splitHostPort(front.Addr().String())
	r, err := agentbe.NewRemote(agentbe.RemoteConfig{RootDir: d.root, Host: host, Port: p,
		HostKeyCallback: acceptAnyKey, KeepaliveInterval: 100 * time.Millisecond, KeepaliveCountMax: 2,
		Reconnect: agentbe.ReconnectConfig{Disabled: true}})
	must(t, err)
	defer r.Destroy(context.Background())
	must(t, r.Connect(context.Background()))
	close(stop)
	deadline := time.Now().Add(5 * time.Second)
	for r.Status() != agentbe.StatusDisconnected && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if r.Status() != agentbe.StatusDisconnected {
		t.Fatalf("stalled link still %v after 5 s", r.Status())
	}
}

// acceptAnyKey is for the tests whose peer's key is not at hand (a proxy in
// front of the daemon, a server that is never reached).
var acceptAnyKey = ssh.InsecureIgnoreHostKey()

func TestRemoteMCPClient(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "mcp-token")
	r := d.remote(t, nil)
	c, err := agentbe.MCPClient(ctx, r, agentbe.MCPOptions{})
	must(t, err)
	tools, err := c.ListTools(ctx)
	must(t, err)
	names := map[string]bool{}
	for _, tl := range tools {
		names[tl.Name] = true
	}
	if !names["read_text_file"] || !names["exec"] {
		t.Fatalf("tools %v", names)
	}
	if res, err := c.CallTool(ctx, "write_file", map[string]any{"path": "m.txt", "content": "via mcp"}); err != nil || res.IsError {
		t.Fatalf("write_file %+v %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(d.root, "m.txt")); string(b) != "via mcp" {
		t.Errorf("on disk %q", b)
	}
	must(t, c.Close())

	s, err := r.Scope("users/alice", agentbe.ScopeOptions{})
	must(t, err)
	sc, err := agentbe.MCPClient(ctx, s, agentbe.MCPOptions{ScopePath: "proj"})
	must(t, err)
	if res, err := sc.CallTool(ctx, "write_file", map[string]any{"path": "x.txt", "content": "scoped"}); err != nil || res.IsError {
		t.Fatalf("scoped write_file %+v %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(d.root, "users/alice/proj/x.txt")); string(b) != "scoped" {
		t.Errorf("scoped write landed wrong: %q", b)
	}
	if _, err := agentbe.MCPTransport(ctx, r, agentbe.MCPOptions{}); !errors.Is(err, agentbe.ErrNotImplemented) {
		t.Errorf("MCPTransport on a Remote: %v", err)
	}
	url, h := r.MCPEndpoint()
	if !strings.HasSuffix(url, "/mcp") || h.Get("Authorization") != "Bearer mcp-token" || h.Get("X-Root-Dir") != d.root {
		t.Errorf("endpoint %s %v", url, h)
	}
	// A wrong token: the client fails as a connection does, no retry.
	bad := d.remote(t, func(c *agentbe.RemoteConfig) { c.Token = "nope" })
	if _, err := agentbe.MCPClient(ctx, bad, agentbe.MCPOptions{}); agentbe.CodeOf(err) != agentbe.CodeInvalidConfiguration ||
		!errors.Is(err, agentbe.ErrUnauthorized) {
		t.Errorf("bad token: %v", err)
	}
	must(t, r.Destroy(ctx))
	if _, err := sc.ListTools(ctx); err == nil {
		t.Error("client still usable after Destroy")
	}
}

// TestRemoteStopsRetryingWhenRefused: the daemon comes back with another
// token; the first attempt is refused (4001) and no other follows.
func TestRemoteStopsRetryingWhenRefused(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "first")
	r := d.remote(t, fastReconnect)
	log := recordStatus(r)
	must(t, r.Connect(ctx))
	d.kill()
	d.token = "second"
	d.start()
	waitStatus(t, log, "connecting,connected,disconnected,reconnecting,disconnected")
	time.Sleep(500 * time.Millisecond)
	if got := log.get(); got != "connecting,connected,disconnected,reconnecting,disconnected" {
		t.Errorf("kept retrying after a refusal: %s", got)
	}
	if err := r.Connect(ctx); !errors.Is(err, agentbe.ErrUnauthorized) {
		t.Errorf("Connect: %v", err)
	}
}

// TestRemoteMCPNoRetry: an MCP request that fails (a 503, then a dropped
// connection) propagates at once; nothing is sent again (docs/status-and-errors.md, reconnection: MCP
// requests MUST NOT be retried automatically).
func TestRemoteMCPNoRetry(t *testing.T) {
	ctx := context.Background()
	for _, fail := range []string{"503", "drop"} {
		var posts atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.Method == http.MethodPost {
				posts.Add(1)
			}
			if fail == "drop" {
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					conn.Close()
					return
				}
			}
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}))
		host, port := splitHostPort(srv.Listener.Addr().String())
		r, err := agentbe.NewRemote(agentbe.RemoteConfig{RootDir: "/w", Host: "127.0.0.1", Port: 1,
			MCPHost: host, MCPPort: port, HostKeyCallback: acceptAnyKey})
		must(t, err)
		if _, err := agentbe.MCPClient(ctx, r, agentbe.MCPOptions{}); agentbe.CodeOf(err) != agentbe.CodeConnectionClosed {
			t.Errorf("%s: MCP client against a failing server: %v", fail, err)
		}
		if n := posts.Load(); n != 1 {
			t.Errorf("%s: %d POSTs, want exactly 1", fail, n)
		}
		r.Destroy(ctx)
		srv.Close()
	}
}

// TestRemoteLeavesEscapeClassToDaemon: the client checks the dangerous
// class only; whether "cd" is refused is the daemon's call, from its own
// isolation (software: refused there, with the daemon's error; bwrap:
// runs).
func TestRemoteLeavesEscapeClassToDaemon(t *testing.T) {
	ctx := context.Background()
	d := &testDaemon{t: t, root: t.TempDir(), token: "tok", addr: "127.0.0.1:0", iso: agentbe.IsolationSoftware}
	d.start()
	t.Cleanup(d.kill)
	r := d.remote(t, nil)
	must(t, r.Mkdir(ctx, "src"))
	if _, err := r.Exec(ctx, "sudo true", agentbe.ExecOptions{}); !errors.Is(err, agentbe.ErrDangerous) {
		t.Fatalf("sudo: %v, want ErrDangerous from the client", err)
	}
	// Software mode: the daemon refuses cd (its exit status 1 and message).
	_, err := r.Exec(ctx, "cd src && pwd", agentbe.ExecOptions{})
	var xe *agentbe.ExitError
	if !errors.As(err, &xe) || !strings.Contains(string(xe.Stderr), "cd") {
		t.Fatalf("software daemon, cd: %v; want the daemon's refusal", err)
	}
	_, lookErr := exec.LookPath("bwrap")
	testenv.Require(t, lookErr == nil, "bwrap")
	b := &testDaemon{t: t, root: t.TempDir(), token: "tok", addr: "127.0.0.1:0", iso: agentbe.IsolationBwrap}
	b.start()
	t.Cleanup(b.kill)
	rb := b.remote(t, nil)
	must(t, rb.Mkdir(ctx, "src"))
	out, err := rb.Exec(ctx, `cd src && pwd && (cd "$HOME" && pwd -P)`, agentbe.ExecOptions{})
	// Under bwrap the workspace is mounted at the sandbox's own path.
	if want := "/tmp/agentbe-workspace/src\n/tmp/agentbe-workspace\n"; err != nil || string(out) != want {
		t.Fatalf("bwrap daemon: %q %v; want %q", out, err, want)
	}
}
