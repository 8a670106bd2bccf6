package agentbe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/agentbe/agent-backend/internal/wsnet"
	"github.com/agentbe/agent-backend/sftpjail"
)

// ErrUnauthorized is wrapped by the error of a Remote whose daemon refused
// the token (WebSocket close 4001, HTTP 401), the request (HTTP 403) or the
// SSH credentials; such a failure has the code INVALID_CONFIGURATION and is
// never retried.
var ErrUnauthorized = errors.New("unauthorized")

// defaultConnectTimeout bounds a connection attempt when OperationTimeout
// is not set.
const defaultConnectTimeout = 30 * time.Second

// defaultDaemonPort is the daemon's HTTP/WebSocket port when
// RemoteConfig.Port is 0.
const defaultDaemonPort = 3001

// remoteCore is what a Remote and its scope views share: the configuration,
// the connection and its state machine.
type remoteCore struct {
	cfg     RemoteConfig
	rootDir string // the root Remote's RootDir, clean
	checker *SafetyChecker
	log     opLog
	life    *lifecycle      // status (delivered async) and tracked closers
	ctx     context.Context // cancelled by destroy
	cancel  context.CancelFunc

	mu         sync.Mutex
	link       *remoteLink
	attempt    chan struct{} // closed when the attempt in progress ends
	attemptErr error         // outcome of the last attempt
	retry      *time.Timer   // a scheduled reconnection attempt
	retries    int           // failed attempts since the loss
	lastErr    error         // why the last link went down
	destroyed  bool
	http       *http.Transport // MCP requests, made on first use

	leftMu sync.Mutex
	left   map[string]bool // temporary files of failed writes, still to remove
}

func newRemoteCore(cfg RemoteConfig, checker *SafetyChecker) *remoteCore {
	ctx, cancel := context.WithCancel(context.Background())
	life := newLifecycle(StatusDisconnected)
	life.async = true
	return &remoteCore{cfg: cfg, checker: checker, log: opLog{logger: cfg.Logger, mode: cfg.LogMode},
		life: life, ctx: ctx, cancel: cancel}
}

// remoteLink is one live SSH connection and its SFTP session.
type remoteLink struct {
	ssh  *ssh.Client
	sftp *sftpjail.Client
	lost chan struct{} // closed once the link is down
	once sync.Once
	// presentedRoot is RootDir as the daemon's REALPATH presents it: the
	// path itself from OpenSSH or the reference, "/" (or a path from "/" of
	// its workspace) from ours.
	presentedRoot string
	// ours: the server is our daemon (its version string says so), which
	// confines scopes itself (see remote_scope.go).
	ours bool

	scopeMu    sync.Mutex
	scopes     map[string]*scopeSession // SFTP sessions of scopes, by RootDir
	scopeTick  uint64
	scopeFreed chan struct{} // closed when a session becomes idle
}

func (l *remoteLink) close() {
	l.once.Do(func() {
		close(l.lost)
		l.closeScopes()
		l.sftp.Close()
		l.ssh.Close()
	})
}

func (c *remoteCore) alive(op, p string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.destroyed {
		return &Error{Code: CodeDestroyed, Op: op, Path: p, Backend: KindRemote, Err: ErrDestroyed}
	}
	return nil
}

// connClosed is the error of an operation that found no connection or lost
// it.
func connClosed(op, p string, cause error) error {
	err := ErrConnectionClosed
	if cause != nil {
		err = &wrapped{msg: "connection closed", err: cause, is: ErrConnectionClosed}
	}
	return &Error{Code: CodeConnectionClosed, Op: op, Path: p, Backend: KindRemote, Err: err}
}

// ensure returns the live link, connecting first when there is none: an
// operation on a disconnected Remote connects it (the first one, and again
// after the retries ran out). While a reconnection is scheduled it fails at
// once with CONNECTION_CLOSED instead of waiting for the backoff.
func (c *remoteCore) ensure(ctx context.Context, op string) (*remoteLink, error) {
	c.mu.Lock()
	if c.destroyed {
		c.mu.Unlock()
		return nil, &Error{Code: CodeDestroyed, Op: op, Backend: KindRemote, Err: ErrDestroyed}
	}
	if c.link != nil {
		l := c.link
		c.mu.Unlock()
		return l, nil
	}
	if c.retry != nil && c.attempt == nil {
		cause := c.lastErr
		c.mu.Unlock()
		return nil, connClosed(op, "", cause)
	}
	if c.attempt == nil {
		c.startAttempt(false)
	}
	ch := c.attempt
	c.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return nil, connClosed(op, "", ctx.Err())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.link != nil {
		return c.link, nil
	}
	if c.destroyed {
		return nil, &Error{Code: CodeDestroyed, Op: op, Backend: KindRemote, Err: ErrDestroyed}
	}
	return nil, c.attemptErr
}

// startAttempt starts a connection attempt; c.mu is held.
func (c *remoteCore) startAttempt(reconnect bool) {
	ch := make(chan struct{})
	c.attempt = ch
	if reconnect {
		c.life.setStatus(StatusReconnecting)
	} else {
		c.life.setStatus(StatusConnecting)
	}
	go c.runAttempt(reconnect, ch)
}

func (c *remoteCore) runAttempt(reconnect bool, ch chan struct{}) {
	defer close(ch)
	link, err := c.dial(c.ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attempt = nil
	if c.destroyed {
		if link != nil {
			link.close()
		}
		return
	}
	if err == nil {
		c.link, c.retries = link, 0
		c.life.setStatus(StatusConnected)
		go c.watch(link)
		return
	}
	code, is := CodeConnectionClosed, ErrConnectionClosed
	refused := errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrHostKeyRefused)
	switch {
	case refused:
		code = CodeInvalidConfiguration
	case errors.Is(err, ErrDaemonFull):
		code, is = CodeDaemonFull, ErrDaemonFull
	}
	c.attemptErr = &Error{Code: code, Op: "connect", Backend: KindRemote,
		Err: &wrapped{msg: "cannot connect to " + c.addr(), err: err, is: is}}
	if !reconnect || refused {
		c.life.setStatus(StatusDisconnected)
		return
	}
	c.retries++
	if max := c.maxRetries(); max > 0 && c.retries >= max {
		c.life.setStatus(StatusDisconnected)
		return
	}
	c.schedule()
}

// schedule arms the next reconnection attempt; c.mu is held.
func (c *remoteCore) schedule() {
	c.retry = time.AfterFunc(c.backoff(c.retries), func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.retry = nil
		if c.destroyed || c.link != nil || c.attempt != nil {
			return
		}
		c.startAttempt(true)
	})
}

// backoff is min(initial·multiplier^n, max).
func (c *remoteCore) backoff(n int) time.Duration {
	rc := c.cfg.Reconnect
	initial, max, mult := rc.InitialDelay, rc.MaxDelay, rc.Multiplier
	if initial <= 0 {
		initial = time.Second
	}
	if max <= 0 {
		max = 30 * time.Second
	}
	if mult <= 0 {
		mult = 2
	}
	d := float64(initial) * math.Pow(mult, float64(n))
	if d > float64(max) || math.IsInf(d, 0) || math.IsNaN(d) {
		return max
	}
	return time.Duration(d)
}

func (c *remoteCore) maxRetries() int {
	switch n := c.cfg.Reconnect.MaxRetries; {
	case n == 0:
		return 5
	case n < 0:
		return 0
	default:
		return n
	}
}

// watch waits for the SSH connection to end and handles the loss.
func (c *remoteCore) watch(l *remoteLink) { c.lost(l, l.ssh.Wait()) }

// lost is where every detector of a link's end reports: the SSH connection
// ending (watch), keepalive, and the SFTP stream ending (sessionStream). If
// l is the current link, the status becomes disconnected and one
// reconnection is scheduled; then l is torn down (the SFTP session and the
// SSH channels close), so pending operations fail only once the status
// says so. Calls after the first, including the one l's own teardown
// makes, do nothing. (c.link == l implies not destroyed: destroy clears
// c.link. The retry counter is already zero: a link is installed only
// with it reset.)
func (c *remoteCore) lost(l *remoteLink, cause error) {
	select {
	case <-l.lost:
		return
	default:
	}
	c.mu.Lock()
	if c.link == l {
		c.link, c.lastErr = nil, cause
		c.life.setStatus(StatusDisconnected)
		if !c.cfg.Reconnect.Disabled {
			c.schedule()
		}
	}
	c.mu.Unlock()
	l.close()
}

// destroy implements Remote.Destroy.
func (c *remoteCore) destroy() error {
	c.mu.Lock()
	if c.destroyed {
		c.mu.Unlock()
		return nil
	}
	c.destroyed = true
	if c.retry != nil {
		c.retry.Stop()
		c.retry = nil
	}
	l := c.link
	c.link = nil
	c.cancel()
	c.mu.Unlock()
	if l != nil {
		l.close()
	}
	return c.life.destroy()
}

func (c *remoteCore) addr() string {
	if c.cfg.Transport == TransportSSH {
		return net.JoinHostPort(c.cfg.Host, strconv.Itoa(portOr(c.cfg.SSHPort, 22)))
	}
	return net.JoinHostPort(c.cfg.Host, strconv.Itoa(c.port()))
}

// port is the daemon's HTTP/WebSocket port, its default applied.
func (c *remoteCore) port() int { return portOr(c.cfg.Port, defaultDaemonPort) }

// header returns a copy of the configured Headers with the token's
// Authorization added: what the WebSocket upgrade and every MCP request
// carry.
func (c *remoteCore) header() http.Header {
	h := c.cfg.Headers.Clone()
	if h == nil {
		h = http.Header{}
	}
	if c.cfg.Token != "" {
		h.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	return h
}

func portOr(p, def int) int {
	if p == 0 {
		return def
	}
	return p
}

// dial makes one connection: the transport, the SSH handshake and the SFTP
// session, all within the connect timeout.
func (c *remoteCore) dial(ctx context.Context) (*remoteLink, error) {
	timeout := c.cfg.OperationTimeout
	if timeout <= 0 {
		timeout = defaultConnectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var nc net.Conn
	var err error
	if c.cfg.Transport == TransportSSH {
		nc, err = (&net.Dialer{}).DialContext(ctx, "tcp", c.addr())
	} else {
		nc, err = c.dialDaemon(ctx)
	}
	if err != nil {
		if wsnet.IsUnauthorized(err) {
			return nil, &wrapped{msg: "the daemon refused the token", err: err, is: ErrUnauthorized}
		}
		if wsnet.IsBusy(err) {
			return nil, &wrapped{msg: "daemon full, try again later", err: err, is: ErrDaemonFull}
		}
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	sc, chans, reqs, err := ssh.NewClientConn(nc, c.addr(), c.sshConfig())
	if err != nil {
		nc.Close()
		if wc, ok := nc.(*wsnet.Conn); ok {
			if code, _ := wc.CloseCode(); code == wsnet.CloseUnauthorized {
				return nil, &wrapped{msg: "the daemon refused the token", err: err, is: ErrUnauthorized}
			}
		}
		if c.cfg.Transport == TransportSSH && isSSHAuthFailure(err) {
			return nil, &wrapped{msg: "the SSH server refused the credentials", err: err, is: ErrUnauthorized}
		}
		return nil, err
	}
	client := ssh.NewClient(sc, chans, reqs)
	// The end of the SFTP stream is the loss of the link, which exists only
	// once this dial succeeded: until then the dial's own errors report it.
	var owner atomic.Pointer[remoteLink]
	sftp, err := openSFTPIn(ctx, client, "", func(cause error) {
		if l := owner.Load(); l != nil {
			c.lost(l, cause)
		}
	})
	if err != nil {
		client.Close()
		return nil, err
	}
	if !stop() {
		client.Close()
		return nil, ctx.Err()
	}
	presented, err := sftp.RealPath(ctx, c.rootDir)
	if err != nil {
		sftp.Close()
		client.Close()
		return nil, fmt.Errorf("workspace %s on the daemon: %w", c.rootDir, err)
	}
	c.removeLeftBehind(ctx, sftp)
	l := &remoteLink{ssh: client, sftp: sftp, lost: make(chan struct{}), presentedRoot: presented,
		ours: isOurDaemon(client)}
	owner.Store(l)
	go c.keepalive(l)
	return l, nil
}

// maxLeftBehind bounds the temporary files a Remote remembers to remove.
const maxLeftBehind = 1024

// leftBehind records a temporary file (an absolute remote path) that a
// failed write could not remove because the link went down; the next
// connection removes it before it is used.
func (c *remoteCore) leftBehind(tmp string) {
	c.leftMu.Lock()
	defer c.leftMu.Unlock()
	if c.left == nil {
		c.left = map[string]bool{}
	}
	if len(c.left) < maxLeftBehind {
		c.left[tmp] = true
	}
}

// removeLeftBehind removes, over a new connection's SFTP session, the
// temporary files recorded by leftBehind: only regular files, and only
// those names. A name is forgotten once removed, found absent or refused;
// it is kept for the next connection when this one fails meanwhile.
func (c *remoteCore) removeLeftBehind(ctx context.Context, s *sftpjail.Client) {
	c.leftMu.Lock()
	names := make([]string, 0, len(c.left))
	for n := range c.left {
		names = append(names, n)
	}
	c.leftMu.Unlock()
	for _, n := range names {
		fi, err := s.Lstat(ctx, n)
		if err == nil && fi.Mode().IsRegular() {
			err = s.Remove(ctx, n)
		}
		if errors.Is(err, sftpjail.ErrConnClosed) || ctx.Err() != nil {
			return
		}
		c.leftMu.Lock()
		delete(c.left, n)
		c.leftMu.Unlock()
	}
}

// isOurDaemon reports whether the SSH server is our daemon, by its
// version string.
func isOurDaemon(c *ssh.Client) bool { return strings.Contains(string(c.ServerVersion()), "agentbe") }

func isSSHAuthFailure(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "unable to authenticate") || strings.Contains(msg, "no supported methods remain")
}

func (c *remoteCore) dialWebSocket(ctx context.Context) (net.Conn, error) {
	scheme := "ws"
	if c.cfg.Secure {
		scheme = "wss"
	}
	return wsnet.Dial(ctx, scheme+"://"+c.addr()+"/ssh", wsnet.DialConfig{Header: c.header(), TLS: c.cfg.TLS})
}

func (c *remoteCore) sshConfig() *ssh.ClientConfig {
	user := c.cfg.SSHUser
	if user == "" {
		user = "root"
	}
	var auth []ssh.AuthMethod
	if len(c.cfg.SSHSigners) > 0 {
		auth = append(auth, ssh.PublicKeys(c.cfg.SSHSigners...))
	}
	pw := c.cfg.SSHPassword
	if pw == "" && c.cfg.Transport != TransportSSH {
		pw = "agentbe" // any password: the WebSocket already carried the token
	}
	if pw != "" {
		auth = append(auth, ssh.Password(pw))
	}
	return &ssh.ClientConfig{User: user, Auth: auth, HostKeyCallback: c.checkHostKey}
}

// checkHostKey runs the configured callback; a refusal wraps
// ErrHostKeyRefused (the helpers' errors already do), so that it is told
// apart from a lost connection and not retried.
func (c *remoteCore) checkHostKey(host string, remote net.Addr, key ssh.PublicKey) error {
	err := c.cfg.HostKeyCallback(host, remote, key)
	if err == nil || errors.Is(err, ErrHostKeyRefused) {
		return err
	}
	return &wrapped{msg: host + " presented " + key.Type() + " " + ssh.FingerprintSHA256(key),
		err: err, is: ErrHostKeyRefused}
}

// openSFTPIn starts the "sftp" subsystem on a new session, jailed by our
// daemon at scope (its RootDir) when scope is not ""; down is told when
// its stream ends (see sessionStream).
func openSFTPIn(ctx context.Context, client *ssh.Client, scope string, down func(error)) (*sftpjail.Client, error) {
	s, err := client.NewSession()
	if err != nil {
		return nil, err
	}
	if scope != "" {
		if err := sendScope(s, scope); err != nil {
			s.Close()
			return nil, err
		}
	}
	w, err := s.StdinPipe()
	if err != nil {
		s.Close()
		return nil, err
	}
	r, err := s.StdoutPipe()
	if err != nil {
		s.Close()
		return nil, err
	}
	if err := s.RequestSubsystem("sftp"); err != nil {
		s.Close()
		if scope != "" {
			return nil, fmt.Errorf("sftp subsystem: %w: %w", errScopeRefused, err)
		}
		return nil, fmt.Errorf("sftp subsystem: %w", err)
	}
	return sftpjail.NewClientContext(ctx, sessionStream{r: r, w: w, s: s, down: down},
		&sftpjail.ClientOptions{ChunkSize: remoteChunk, MaxInFlight: remoteInFlight})
}

// errSFTPClosed is the cause of a loss found by the SFTP client closing its
// stream by itself (a malformed reply).
var errSFTPClosed = errors.New("SFTP session closed")

// sessionStream is an SSH session's stdin and stdout as one stream, for the
// SFTP client. Its end is a transport-level loss of the link: a failed Read
// or Write calls down before the SFTP client sees the error and fails its
// requests, so the status has changed before any operation returns
// CONNECTION_CLOSED.
type sessionStream struct {
	r    io.Reader
	w    io.WriteCloser
	s    *ssh.Session
	down func(error)
}

func (s sessionStream) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil {
		s.down(err)
	}
	return n, err
}

func (s sessionStream) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil {
		s.down(err)
	}
	return n, err
}

// Close closes the channel. It sends no EOF first: x/crypto's CloseWrite
// races with a Write in flight on another goroutine. down runs on its own
// goroutine: when the SFTP client closes the stream by itself, it does so
// inside its own Close, which the link's teardown calls again.
func (s sessionStream) Close() error {
	go s.down(errSFTPClosed)
	return s.s.Close()
}

// keepalive probes the link every interval and closes it after CountMax
// probes in a row went unanswered within an interval.
func (c *remoteCore) keepalive(l *remoteLink) {
	every := c.cfg.KeepaliveInterval
	if every < 0 {
		return
	}
	if every == 0 {
		every = 30 * time.Second
	}
	max := c.cfg.KeepaliveCountMax
	if max <= 0 {
		max = 3
	}
	t := time.NewTicker(every)
	defer t.Stop()
	misses := 0
	for {
		select {
		case <-l.lost:
			return
		case <-t.C:
		}
		answered, down := probe(l, every)
		select {
		case <-l.lost:
			return
		default:
		}
		switch {
		case answered:
			misses = 0
			continue
		case down:
			misses = max
		default:
			misses++
		}
		if misses >= max {
			c.lost(l, errors.New("keepalive: no answer"))
			return
		}
	}
}

// probe sends one keepalive request on l and waits up to wait for the
// answer: answered reports a reply, down a failed request or the link's
// loss (on a link that is down the request fails at once).
func probe(l *remoteLink, wait time.Duration) (answered, down bool) {
	res := make(chan error, 1)
	go func() {
		_, _, err := l.ssh.SendRequest("keepalive@openssh.com", true, nil)
		res <- err
	}()
	select {
	case err := <-res:
		return err == nil, err != nil
	case <-l.lost:
		return false, true
	case <-time.After(wait):
		return false, false
	}
}

// opCtx applies OperationTimeout to ctx when it has no earlier deadline.
func (c *remoteCore) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.cfg.OperationTimeout <= 0 {
		return ctx, func() {}
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= c.cfg.OperationTimeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.cfg.OperationTimeout)
}

// remoteChunk and remoteInFlight shape a Remote's SFTP transfers: 128 KiB
// READs and WRITEs (lowered to what the daemon announces in
// limits@openssh.com), 16 in flight, so a transfer buffers 2 MiB as
// OpenSSH's 64 × 32 KiB does, with a quarter of the requests. Measured
// against our daemon (BenchmarkRemoteSideBySide, 64 MiB): about 15 % more
// throughput both ways than 32 KiB chunks.
const (
	remoteChunk    = 128 << 10
	remoteInFlight = 16
)

// ErrDaemonFull is wrapped by the error (code DAEMON_FULL) of a Remote
// whose daemon answered that it serves as many connections as it accepts
// (HTTP 503 to the WebSocket upgrade), still so after a few retries. The
// daemon is up: try again later, or elsewhere. Such an error does not match
// ErrConnectionClosed, and a Pool does not take the daemon for dead.
var ErrDaemonFull = errors.New("daemon full")

// Retries of a full daemon: at most fullRetries more upgrades, each after
// the daemon's Retry-After (at most maxFullWait) or, without one, a backoff
// from fullBackoff; all within the connect timeout.
const (
	fullRetries = 3
	fullBackoff = 250 * time.Millisecond
	maxFullWait = 5 * time.Second
)

// dialDaemon opens the daemon's /ssh WebSocket, asking again while it
// answers that it is full (see fullRetries). A retry that would end past
// ctx's deadline is not made: the daemon's last answer is returned.
func (c *remoteCore) dialDaemon(ctx context.Context) (net.Conn, error) {
	for attempt := 0; ; attempt++ {
		conn, err := c.dialWebSocket(ctx)
		var busy *wsnet.BusyError
		if !errors.As(err, &busy) || attempt == fullRetries {
			return conn, err
		}
		wait := fullWait(busy.RetryAfter, attempt)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, err
		}
	}
}

// fullWait is how long to wait before asking a full daemon again: its
// Retry-After or a doubling backoff, capped, plus up to a fifth more at
// random so that clients turned away together do not return together.
func fullWait(retryAfter time.Duration, attempt int) time.Duration {
	d := retryAfter
	if d <= 0 {
		d = fullBackoff << attempt
	}
	d = min(d, maxFullWait)
	return d + rand.N(d/5+1)
}
