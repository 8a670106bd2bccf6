package agentbe

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// RemoteTransport selects how a Remote reaches the daemon's SSH server.
type RemoteTransport string

// Transports. The zero value ("") means TransportSSHWebSocket.
const (
	// TransportSSHWebSocket tunnels SSH through the daemon's WebSocket
	// endpoint (ws[s]://host:port/ssh), authenticated with the token.
	TransportSSHWebSocket RemoteTransport = "ssh-websocket"
	// TransportSSH speaks SSH directly (a daemon run with
	// --conventional-ssh, or any sshd): user and password or key.
	TransportSSH RemoteTransport = "ssh"
)

// UnlimitedRetries as ReconnectConfig.MaxRetries retries for ever.
const UnlimitedRetries = -1

// ReconnectConfig controls how a Remote reconnects after losing its
// connection (docs/status-and-errors.md, reconnection). The zero value is the
// spec's default: enabled, 5 attempts, delays of 1 s, 2 s, 4 s, … capped at
// 30 s.
type ReconnectConfig struct {
	// Disabled turns automatic reconnection off: after a loss the Remote
	// stays disconnected until the next operation or Connect.
	Disabled bool
	// MaxRetries bounds the attempts after one loss; 0 means 5 and
	// UnlimitedRetries never stops. (The reference's "0 = unlimited" is
	// UnlimitedRetries here, so that the zero value is the default.)
	MaxRetries int
	// InitialDelay is the wait before the first attempt; 0 means 1 s.
	InitialDelay time.Duration
	// MaxDelay caps the wait; 0 means 30 s.
	MaxDelay time.Duration
	// Multiplier grows the wait after each failed attempt; 0 means 2.
	Multiplier float64
}

// RemoteConfig configures a Remote backend. RootDir, Host and
// HostKeyCallback are required; the zero value of every other field is a
// working default. The Config is
// copied by NewRemote: later changes to it have no effect.
type RemoteConfig struct {
	// RootDir is the workspace directory on the remote host (absolute).
	RootDir string
	// Host is the daemon's host name or address.
	Host string
	// Port is the daemon's HTTP/WebSocket port; 0 means 3001.
	Port int
	// Transport selects SSH over WebSocket (default) or plain SSH.
	Transport RemoteTransport
	// Token authenticates to the daemon (WebSocket and MCP): sent as
	// "Authorization: Bearer <token>".
	Token string
	// Secure uses wss:// and https://; TLS configures them (nil: defaults).
	Secure bool
	TLS    *tls.Config
	// Headers are added to the WebSocket upgrade and to MCP requests.
	Headers http.Header

	// SSHPort is the port of TransportSSH; 0 means 22.
	SSHPort int
	// SSHUser is the SSH user; "" means "root". Over WebSocket the daemon
	// accepts any user once the token was checked.
	SSHUser string
	// SSHPassword and SSHSigners authenticate TransportSSH.
	SSHPassword string
	SSHSigners  []ssh.Signer
	// HostKeyCallback checks the daemon's SSH host key; it is required
	// (NewRemote fails without it, as x/crypto/ssh does). Pin the key with
	// HostKeyFingerprint (the daemon logs its fingerprint at start;
	// `agent-backend hostkey --file KEYFILE` prints it), HostKeyFromKnownHosts
	// or ssh.FixedHostKey; ssh.InsecureIgnoreHostKey() accepts any key, so
	// that a man in the middle sees every file and command. A refusal fails
	// the connection with ErrHostKeyRefused and is not retried. The key
	// protects the SSH session, not the token: over ws:// the token crosses
	// the network in the upgrade request before the SSH handshake, so use
	// Secure (wss://) on a network that is not trusted.
	HostKeyCallback ssh.HostKeyCallback

	// MCPHost and MCPPort override where MCP requests go; "" and 0 mean
	// Host and Port.
	MCPHost string
	MCPPort int

	// Reconnect controls automatic reconnection; see ReconnectConfig.
	Reconnect ReconnectConfig
	// OperationTimeout, when positive, bounds every operation (and a
	// connection attempt) that has no earlier deadline; 0 means none for
	// operations and 30 s for connecting.
	OperationTimeout time.Duration
	// KeepaliveInterval is the time between SSH keepalive probes; 0 means
	// 30 s, negative disables them. KeepaliveCountMax unanswered probes (0
	// means 3) close the connection.
	KeepaliveInterval time.Duration
	KeepaliveCountMax int

	// Env is added to every command's environment.
	Env map[string]string
	// AllowDangerous turns off the client-side dangerous-command check (the
	// daemon checks again); Safety adds patterns to it. The client checks
	// the dangerous class only: whether the workspace-escape class (cd,
	// $HOME, "..") applies depends on the daemon's isolation, so the daemon
	// decides it (Safety.Confined is ignored).
	AllowDangerous bool
	Safety         SafetyPolicy
	// MaxOutputBytes caps collected stdout; 0 means DefaultMaxOutputBytes.
	MaxOutputBytes int
	// MaxReadBytes caps Read; 0 means the library's default read limit.
	MaxReadBytes int64
	// Logger receives operations; LogMode selects which.
	Logger  OpLogger
	LogMode LogMode
}

// Remote is a backend on a daemon reached over the network: files through
// SFTP (never through shell commands), commands through SSH exec channels,
// MCP tools over Streamable HTTP. It connects lazily on its first operation
// (or on Connect) and reconnects after a loss; see Status for the states.
// All methods are safe for concurrent use.
type Remote struct {
	core    *remoteCore
	rootDir string // absolute, clean; a view's is below the root's
	rel     string // rootDir relative to the root Remote's ("." for the root)
	view    bool
	scopes  *scopeSet
}

var _ Backend = (*Remote)(nil)

// NewRemote validates cfg and returns a disconnected Remote; nothing is
// dialled until the first operation or Connect. A cfg without
// HostKeyCallback is an error wrapping ErrNoHostKeyCallback.
func NewRemote(cfg RemoteConfig) (*Remote, error) {
	if cfg.RootDir == "" || cfg.RootDir[0] != '/' {
		return nil, configErr("RootDir must be an absolute path on the remote host", nil)
	}
	if cfg.Host == "" {
		return nil, configErr("Host is required", nil)
	}
	switch cfg.Transport {
	case "", TransportSSHWebSocket, TransportSSH:
	default:
		return nil, configErr("unknown transport "+string(cfg.Transport), nil)
	}
	if cfg.HostKeyCallback == nil {
		return nil, configErr(noHostKeyHelp, ErrNoHostKeyCallback)
	}
	if cfg.MaxOutputBytes < 0 || cfg.Port < 0 || cfg.Port > 65535 || cfg.SSHPort < 0 || cfg.SSHPort > 65535 {
		return nil, configErr("ports and MaxOutputBytes must be in range", nil)
	}
	pol := cfg.Safety
	pol.Confined = true
	checker, err := NewSafetyChecker(pol)
	if err != nil {
		return nil, err
	}
	cfg.Headers = cfg.Headers.Clone()
	cfg.Env = mergeMaps(cfg.Env)
	cfg.SSHSigners = append([]ssh.Signer(nil), cfg.SSHSigners...)
	rel, _ := wspath.Resolve("/", cfg.RootDir)
	root := wspath.Join("/", rel)
	c := newRemoteCore(cfg, checker)
	c.rootDir = root
	return &Remote{core: c, rootDir: root, rel: ".", scopes: newScopeSet()}, nil
}

// Kind reports KindRemote.
func (r *Remote) Kind() Kind { return KindRemote }

// RootDir is the workspace directory on the remote host.
func (r *Remote) RootDir() string { return r.rootDir }

// Status reports the connection state: disconnected until the first
// connection, connecting during it, connected, disconnected after a loss
// (and for good once the retries ran out), reconnecting during retry
// attempts and their backoff, destroyed after Destroy.
func (r *Remote) Status() Status { return r.core.life.Status() }

// OnStatusChange subscribes fn to status transitions. Callbacks run one at
// a time, in transition order, on a goroutine of the Remote's (so they may
// call the Remote without deadlock).
func (r *Remote) OnStatusChange(fn func(old, new Status)) func() {
	return r.core.life.OnStatusChange(fn)
}

// Track registers c to be closed by Destroy and returns the function that
// unregisters it; see Backend.
func (r *Remote) Track(c io.Closer) (untrack func()) { return r.core.life.track(c) }

// Connect connects now instead of on the first operation. It returns at
// once when already connected.
func (r *Remote) Connect(ctx context.Context) error {
	_, err := r.core.ensure(ctx, "connect")
	return err
}

// Destroy closes the connection (pending operations fail), cancels any
// scheduled reconnection, closes every tracked resource and moves to
// StatusDestroyed. Scopes are not destroyed. Idempotent; destroying a scope's
// view does nothing.
func (r *Remote) Destroy(ctx context.Context) error {
	if r.view {
		return nil
	}
	return r.core.destroy()
}

// Scope returns a view restricted to the sub-directory p. On our daemon
// the restriction is the daemon's as well as the client's: the scope's
// commands run with only the scope mounted (under bwrap) and its files go
// through an SFTP session the daemon jails at the scope (see
// remote_scope.go; RootDir must then be the daemon's --rootDir or a
// directory under it). On other SSH servers it is the client's alone.
func (r *Remote) Scope(p string, opts ScopeOptions) (*Scope, error) {
	if err := r.core.alive("scope", p); err != nil {
		return nil, err
	}
	return newScope(r, p, opts)
}

func (r *Remote) subtree(rel string) Backend {
	return &Remote{core: r.core, rootDir: wspath.Join(r.rootDir, rel), rel: wspath.Within(r.rel, rel), view: true}
}

func (r *Remote) scopeSet() *scopeSet { return r.scopes }

// ensureDir creates a scope's directory, without logging it as an
// operation of the user's.
func (r *Remote) ensureDir(ctx context.Context, rel string) error {
	return r.mkdirAll(ctx, wspath.Join(r.rootDir, rel))
}

// remotePath resolves p (workspace conventions) to the absolute path on the
// remote host.
func (r *Remote) remotePath(op, p string) (string, error) {
	rel, err := wspath.Resolve(r.rootDir, p)
	if err != nil {
		return "", &Error{Code: CodePathEscape, Op: op, Path: p, Backend: KindRemote, Err: err}
	}
	return wspath.Join(r.rootDir, rel), nil
}

// Host returns the host name or address of the daemon this Remote talks to.
func (r *Remote) Host() string { return r.core.cfg.Host }

// Port returns the daemon's HTTP/WebSocket port, its default applied.
func (r *Remote) Port() int { return r.core.port() }
