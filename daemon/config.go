// Package daemon is agentbe's network daemon (`agent-backend daemon` in full
// mode): it serves one workspace over HTTP (MCP Streamable HTTP at /mcp,
// the ACP proxy and file API at /v1, /health) and SSH over WebSocket
// (/ssh). Protocol logic lives in packages mcp, acp and sftpjail; this
// package wires them to listeners, authentication, scoping, limits and
// shutdown.
package daemon

import (
	"github.com/agentbe/agent-backend/acp"
	"io"
	"log/slog"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// Defaults applied to zero Config fields.
const (
	DefaultPort              = 3001
	DefaultHostKeyPath       = "/var/lib/agentbe/ssh_host_ed25519_key"
	DefaultMaxInFlight       = 256
	DefaultMaxSSHConns       = 64
	DefaultMaxChannels       = 16
	DefaultMaxUploads        = 32
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultBodyReadTimeout   = 30 * time.Second
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultHandshakeTimeout  = 30 * time.Second
)

// Config configures a Server. Only RootDir is required; the zero value of
// every other field is the safe default (dangerous commands blocked, all
// limits on, SSH over WebSocket enabled, no token — see AuthToken).
type Config struct {
	// RootDir is the workspace directory (created if missing).
	RootDir string
	// ScopePath is the static scope: every request works in this
	// sub-directory, and a request naming its own X-Scope-Path is refused
	// with 400. It is validated like the header (see NormalizeScopePath).
	ScopePath string
	// Isolation sandboxes commands (MCP exec and SSH); "" means auto.
	Isolation agentbe.Isolation
	// Shell selects the shell; "" means auto (/bin/bash, else /bin/sh).
	Shell agentbe.Shell
	// ExecLimits bound every command (MCP exec, SSH exec, shells, PTYs,
	// ACP agents; see agentbe.ResourceLimits); zero limits nothing. Limits
	// this host cannot enforce make New fail.
	ExecLimits agentbe.ResourceLimits
	// ExecNetwork is what commands reach: agentbe.NetworkHost ("", the
	// default: the host's network, this daemon's port, loopback services
	// and cloud metadata included) or agentbe.NetworkNone (an empty network
	// namespace per command; needs the bwrap isolation).
	ExecNetwork agentbe.Network

	// Host is the address Run binds; "" means all interfaces, as the
	// reference daemon does. Run logs one warning when no AuthToken is set
	// and Host is not a loopback address.
	Host string
	// Port is the TCP port Run listens on; 0 means DefaultPort.
	Port int

	// AuthToken, when set, is required as "Authorization: Bearer <token>"
	// on /mcp and as that header or ?token= on /ssh. It is compared in
	// constant time and never logged. Empty means no authentication.
	// Config takes any non-empty token (tests use short ones); the
	// agent-backend command refuses one shorter than 32 bytes or a known
	// placeholder, and so should an embedder that takes it from an
	// operator.
	AuthToken string
	// AllowedHosts are extra Host/Origin names accepted on a loopback
	// connection when no AuthToken is set: the DNS-rebinding protection
	// of every route, /ssh and /health included (see Server.Handler). With a
	// token the check is off: a rebinding page does not hold the token,
	// and a legitimate client reaching the daemon through a local proxy
	// under another name must not be refused.
	AllowedHosts []string

	// DisableSSHWS removes the /ssh endpoint.
	DisableSSHWS bool
	// SSHHostKeyPath is the SSH host key file: loaded when present, else an
	// RSA-2048 key is generated and saved there (0600). A key that cannot
	// be saved is used in memory with a warning. "" means
	// DefaultHostKeyPath.
	SSHHostKeyPath string
	// SSHHandshakeTimeout bounds the SSH handshake of a WebSocket
	// connection; 0 means DefaultHandshakeTimeout.
	SSHHandshakeTimeout time.Duration
	// MaxSSHConns bounds concurrent /ssh connections; 0 means
	// DefaultMaxSSHConns. An upgrade beyond is answered, before upgrading,
	// 503 with Retry-After and a JSON body whose message starts "daemon
	// full", so that a client can tell a busy daemon from a dead one.
	MaxSSHConns int
	// MaxChannelsPerConn bounds the concurrent channels of one SSH
	// connection (a channel beyond is rejected); 0 means
	// DefaultMaxChannels.
	MaxChannelsPerConn int
	// MaxACPInstances bounds the live ACP agent processes (starting one
	// more answers 429); 0 means acp.DefaultMaxInstances.
	MaxACPInstances int

	// MaxUploads bounds concurrent /v1 uploads (PUT /v1/fs/file, POST
	// /v1/fs/upload-batch), within MaxInFlight; one beyond is answered 503
	// "daemon full". 0 means DefaultMaxUploads.
	MaxUploads int

	// TenantsFile, when set, is the tenants file (see ParseTenants and
	// docs/tenancy.md): each tenant's token reaches only its scope, and
	// each tenant also has caps of its own (a tenant at one gets 429).
	// With no AuthToken only tenants get in. It requires kernel isolation
	// (Isolation must resolve to bwrap) and excludes ScopePath; New fails
	// otherwise, or when the file is invalid. Run reloads it on SIGHUP.
	TenantsFile string

	// MaxBodyBytes limits an MCP request body (413 beyond); 0 means
	// mcp.DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxInFlight bounds concurrent HTTP requests other than /health and
	// /ssh (/mcp, /v1/*, GET /, one count for all); a request beyond it
	// gets 503 at once, as a full /ssh does. 0 means DefaultMaxInFlight.
	MaxInFlight int
	// BodyReadTimeout bounds how long an MCP request body may take to
	// arrive, so a client that stalls mid-body cannot hold an in-flight
	// slot; the deadline is lifted once the body is read (a long tool call
	// is not cut). 0 means DefaultBodyReadTimeout.
	BodyReadTimeout time.Duration
	// ReadHeaderTimeout and IdleTimeout are the HTTP server's; 0 means
	// DefaultReadHeaderTimeout and DefaultIdleTimeout.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// ShutdownTimeout bounds how long in-flight HTTP requests may still run
	// once shutdown starts; 0 means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration

	// Conventional, when non-nil, also runs and supervises sshd.
	Conventional *SSHDConfig

	// Version is reported by /health; "" means agentbe.Version.
	Version string
	// Revision is the VCS revision /health reports under build.revision;
	// "" means the one the Go toolchain recorded in the binary, if any (a
	// build from a copy without .git, such as an image's, records none:
	// set it from the build, e.g. with -ldflags -X).
	Revision string
	// Logger receives the access log (one line per request: at Debug for
	// a status below 400, else at Info) and warnings; nil means
	// slog.Default().
	Logger *slog.Logger
	// AuditLog, when set, receives the audit log: one JSON object per
	// line for every operation that changes or runs something (commands,
	// MCP tool calls, file writes, moves and deletes through MCP, SFTP and
	// /v1, ACP agents started and stopped, refused authentications), with
	// the request id (docs/observability.md has the schema). Records are
	// buffered and written by one goroutine at least every second and when
	// the Server is closed; a writer that fails or stalls never blocks a
	// request (the error is logged once, the lost records counted).
	AuditLog io.Writer
	// ACPAgents extends or overrides the built-in ACP agents
	// (acp.DefaultRegistry), from --acp-agent id=command flags
	// (acp.ParseAgentFlag) and an --acp-agents-file (acp.ParseAgentsJSON).
	ACPAgents []acp.Agent
}

func (c Config) withDefaults() Config {
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.SSHHostKeyPath == "" {
		c.SSHHostKeyPath = DefaultHostKeyPath
	}
	if c.SSHHandshakeTimeout <= 0 {
		c.SSHHandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.MaxSSHConns <= 0 {
		c.MaxSSHConns = DefaultMaxSSHConns
	}
	if c.MaxChannelsPerConn <= 0 {
		c.MaxChannelsPerConn = DefaultMaxChannels
	}
	if c.MaxUploads <= 0 {
		c.MaxUploads = DefaultMaxUploads
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.ReadHeaderTimeout <= 0 {
		c.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if c.BodyReadTimeout <= 0 {
		c.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Version == "" {
		c.Version = agentbe.Version
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
