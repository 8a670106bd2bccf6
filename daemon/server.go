package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/acp"
	"github.com/agentbe/agent-backend/internal/wsnet"
	"github.com/agentbe/agent-backend/mcp"

	"github.com/agentbe/agent-backend/internal/hostcheck"
)

// Server is a running daemon's state: the workspace backend, the HTTP
// routes and the SSH-over-WebSocket connections. Create it with New, serve
// with Serve (or use Run), and release it with Close.
type Server struct {
	cfg         Config
	local       *agentbe.Local
	rootDir     string // absolute workspace root
	staticScope string // normalized cfg.ScopePath
	auth        auth
	handler     http.Handler
	hostKey     *hostKeyLoader
	ws          *wsRegistry
	sshd        *sshdProcess
	acp         *acp.Handler
	// allowedHosts is Config.AllowedHosts as hostcheck.Rebinding compares
	// them.
	allowedHosts []string
	panics       *panicLog
	ready        *readiness
	// mcpTasks keeps the MCP tasks of /mcp (mcproute.go) across requests.
	mcpTasks   *mcp.TaskStore
	metrics    *serverMetrics
	audit      *auditLog                                          // nil without Config.AuditLog
	onToolCall func(context.Context, string, bool, time.Duration) // s.toolCalled, bound once
	// sweepStop cancels the start-up removal of stale temporary files;
	// sweepDone is closed when it has ended.
	sweepStop context.CancelFunc
	sweepDone chan struct{}
	// testHook, when set (by tests), is called at points of an SSH
	// session's life ("request <type>", "run <kind>"), e.g. to panic there.
	testHook atomic.Pointer[func(point string)]

	// tenants is the loaded tenants file (nil without Config.TenantsFile),
	// swapped whole by ReloadTenants; shares counts what each tenant holds.
	tenants atomic.Pointer[tenantSet]
	shares  *shares
	// execs confine each tenant's commands (tenantexec.go).
	execs tenantExecs
	// watch is the state of GET /v1/fs/watch (fswatch.go).
	watch watchState
}

// New validates cfg and opens the workspace. Dangerous-command blocking is
// always on in full daemon mode. The SSH host key is loaded (or generated)
// in the background so that /health answers at once; /ssh connections wait
// for it.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	cfg.Logger = withRequestIDs(cfg.Logger)
	if cfg.RootDir == "" {
		return nil, fmt.Errorf("daemon: %w: RootDir is required", agentbe.ErrInvalidConfig)
	}
	static, err := NormalizeScopePath(cfg.ScopePath)
	if err != nil {
		return nil, fmt.Errorf("daemon: scope path %q: %w", cfg.ScopePath, err)
	}
	var tenants *tenantSet
	if cfg.TenantsFile != "" {
		if tenants, err = loadTenantSet(cfg); err != nil {
			return nil, err
		}
	}
	obs := &opObserver{}
	local, err := agentbe.NewLocal(agentbe.LocalConfig{
		RootDir:   cfg.RootDir,
		Isolation: cfg.Isolation,
		Shell:     cfg.Shell,
		Logger:    obs, // metrics and audit log
		Limits:    cfg.ExecLimits,
		Network:   cfg.ExecNetwork,
	})
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, local: local, rootDir: local.RootDir(), staticScope: static,
		auth: newAuth(cfg.AuthToken), ws: newWSRegistry(), allowedHosts: hostcheck.Normalize(cfg.AllowedHosts),
		panics: &panicLog{log: cfg.Logger}, shares: newShares(), mcpTasks: mcp.NewTaskStore(mcp.TaskOptions{})}
	if tenants != nil {
		if err := requireKernelIsolation(local); err != nil {
			local.Destroy(context.Background())
			return nil, err
		}
		if err := s.execs.apply(s, tenants); err != nil {
			local.Destroy(context.Background())
			return nil, err
		}
		s.tenants.Store(tenants)
	}
	s.initObservability(obs)
	s.ready = newReadiness(s.rootDir, local, cfg.Logger)
	if !cfg.DisableSSHWS {
		s.hostKey = loadHostKeyAsync(cfg.SSHHostKeyPath, cfg.Logger)
	}
	if s.acp, err = s.newACPHandler(); err != nil {
		local.Destroy(context.Background())
		if s.audit != nil {
			s.audit.Close()
		}
		return nil, err
	}
	s.handler = s.routes()
	s.startSweep()
	return s, nil
}

// startSweep removes, in the background (a huge workspace must not delay
// the start), the temporary files that atomic writes killed mid-way left
// behind (agentbe.Local.RemoveStaleTemps: only names of our exact form,
// only files untouched for agentbe.DefaultStaleTempAge, no link followed),
// and logs how many went.
func (s *Server) startSweep() {
	ctx, cancel := context.WithCancel(context.Background())
	s.sweepStop, s.sweepDone = cancel, make(chan struct{})
	go func() {
		defer close(s.sweepDone)
		defer func() {
			if v := recover(); v != nil {
				s.panics.recovered("stale temporary files sweep", v)
			}
		}()
		res, err := s.local.RemoveStaleTemps(ctx, agentbe.StaleTempOptions{})
		switch {
		case ctx.Err() != nil:
		case err != nil:
			s.cfg.Logger.Warn("daemon: removing stale temporary files failed", "err", err, "removed", res.Removed)
		default:
			s.cfg.Logger.Info("daemon: removed stale temporary files", "removed", res.Removed,
				"scanned", res.Scanned, "truncated", res.Truncated)
		}
	}()
}

// routes builds the mux: /health (no auth, no limit), /mcp (limited),
// /ssh (its own connection limit), /v1/* and GET / (the ACP proxy and file
// API), everything else 404; every route behind hostGuard.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/health", s.healthHandler())
	mux.Handle("/metrics", s.metricsRoute())
	inflight := newLimiter(s.cfg.MaxInFlight, s.cfg.Logger)
	mux.Handle("/mcp", inflight.wrap(s.mcpRoute(), "requests"))
	if !s.cfg.DisableSSHWS {
		mux.Handle("/ssh", newLimiter(s.cfg.MaxSSHConns, s.cfg.Logger).wrap(s.sshRoute(), "SSH connections"))
	}
	mux.Handle("/v1/", inflight.wrap(s.requireBearer(s.limitUploads(s.acp)), "requests"))
	mux.Handle("GET /v1/fs/watch", s.requireBearer(http.HandlerFunc(s.fsWatch))) // its own stream limit
	mux.Handle("POST /v1/fs/grep", inflight.wrap(s.requireBearer(http.HandlerFunc(s.fsGrep)), "requests"))
	mux.Handle("GET /{$}", inflight.wrap(s.acp, "requests"))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, errorBody{"Not Found", "No route for " + r.Method + " " + r.URL.Path})
	})
	return observeRequests(s.panics, s.metrics, s.hostGuard(mux))
}

// Handler returns the daemon's HTTP handler (all routes, access log and
// limits included), e.g. to mount it on a server of one's own.
//
// Without an AuthToken, every route refuses with 403, before any upgrade,
// what a web page may have sent: on a loopback connection a Host or Origin
// naming neither a loopback host nor one of AllowedHosts (a page whose
// name was rebound to 127.0.0.1), on any other an Origin naming another
// host than the request's Host (a cross-site request).
func (s *Server) Handler() http.Handler { return s.handler }

// RootDir is the absolute workspace root.
func (s *Server) RootDir() string { return s.rootDir }

// Serve answers HTTP on ln until ctx is done, then shuts down gracefully
// in this order: WebSocket clients are closed with 1000 "Server
// shutting down", the HTTP server stops accepting and in-flight requests
// get ShutdownTimeout to finish, and a supervised sshd is stopped. It
// returns nil after a shutdown caused by ctx, or the error that stopped
// serving (an sshd that exited ends serving with an error wrapping
// ErrSSHDExited).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 2)
	go func() { errc <- hs.Serve(ln) }()
	if s.sshd != nil {
		go func() { errc <- s.sshd.wait() }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	stopping := time.Now()
	s.cfg.Logger.Info("daemon: shutting down", "cause", shutdownCause(err), "timeout", s.cfg.ShutdownTimeout)
	defer func() { s.cfg.Logger.Info("daemon: shut down", "took", time.Since(stopping)) }()
	s.ws.closeAll(wsnet.CloseNormal, "Server shutting down")
	s.watch.closeAll()
	s.mcpTasks.EndSubscriptions() // open MCP listens end with their result, not at the timeout
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if serr := hs.Shutdown(sctx); serr != nil {
		hs.Close()
	}
	s.ws.wait(s.cfg.ShutdownTimeout)
	if s.sshd != nil {
		s.sshd.stop(s.cfg.ShutdownTimeout)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Close releases the workspace: commands still running are killed. It
// waits for a host key still being generated, so nothing is left writing.
func (s *Server) Close() error {
	s.sweepStop()
	<-s.sweepDone
	s.acp.Close()      // kills every agent process group
	s.mcpTasks.Close() // and every command still running as an MCP task
	if s.hostKey != nil {
		<-s.hostKey.done
	}
	err := s.local.Destroy(context.Background())
	if s.audit != nil {
		s.audit.Close()
	}
	return err
}

// Run creates a Server for cfg, listens on cfg.Host:cfg.Port, serves until
// ctx is done and releases everything. With no AuthToken, no TenantsFile
// and a bind address that is not loopback it logs one warning. With a
// TenantsFile, SIGHUP reloads it (Server.ReloadTenants) while Run runs.
func Run(ctx context.Context, cfg Config) error {
	cfg = cfg.withDefaults()
	if cfg.AuthToken == "" && cfg.TenantsFile == "" && !isLoopbackHost(cfg.Host) {
		cfg.Logger.Warn("daemon: no auth token is set and the daemon listens on a non-loopback address: anyone who can reach it can run commands in the workspace",
			"host", cfg.Host, "port", cfg.Port)
	}
	s, err := New(cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	if cfg.TenantsFile != "" {
		defer s.reloadOnSIGHUP()()
	}
	if cfg.Conventional != nil {
		if err := s.startSSHD(ctx); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		if s.sshd != nil {
			s.sshd.stop(cfg.ShutdownTimeout)
		}
		return fmt.Errorf("daemon: %w", err)
	}
	cfg.Logger.Info("daemon: listening", "addr", ln.Addr().String(), "rootDir", s.rootDir,
		"isolation", string(s.local.Isolation()), "ssh-ws", !cfg.DisableSSHWS)
	return s.Serve(ctx, ln)
}

// shutdownCause says why Serve stops: err, or the context being done.
func shutdownCause(err error) string {
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		return "stop requested"
	}
	return err.Error()
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// StripSecretEnv removes the daemon's own secrets from this process's
// environment, so that no child started without an explicit environment
// inherits them: AUTH_TOKEN and SSH_USERS (the Docker layer's variables),
// AGENTBE_AUTH_TOKEN, and any variable whose value is the token itself.
// Commands run through the workspace never see this process's environment
// anyway (agentbe.LocalConfig.InheritEnv is off).
func StripSecretEnv(token string) {
	for _, k := range []string{"AUTH_TOKEN", "AGENTBE_AUTH_TOKEN", "SSH_USERS"} {
		os.Unsetenv(k)
	}
	if token == "" {
		return
	}
	for _, kv := range os.Environ() {
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				if kv[i+1:] == token {
					os.Unsetenv(kv[:i])
				}
				break
			}
		}
	}
}

// wsRegistry tracks live WebSocket connections for shutdown.
type wsRegistry struct {
	mu     sync.Mutex
	conns  map[*wsnet.ServerConn]struct{}
	wg     sync.WaitGroup
	closed bool
}

func newWSRegistry() *wsRegistry { return &wsRegistry{conns: map[*wsnet.ServerConn]struct{}{}} }

// add registers c; it fails once shutdown has begun.
func (r *wsRegistry) add(c *wsnet.ServerConn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	r.wg.Add(1)
	return true
}

func (r *wsRegistry) remove(c *wsnet.ServerConn) {
	r.mu.Lock()
	if _, ok := r.conns[c]; ok {
		delete(r.conns, c)
		r.wg.Done()
	}
	r.mu.Unlock()
}

func (r *wsRegistry) closeAll(code int, reason string) {
	r.mu.Lock()
	r.closed = true
	list := make([]*wsnet.ServerConn, 0, len(r.conns))
	for c := range r.conns {
		list = append(list, c)
	}
	r.mu.Unlock()
	for _, c := range list {
		c.CloseWith(code, reason)
	}
}

// wait waits up to d for every connection's handler to finish.
func (r *wsRegistry) wait(d time.Duration) {
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}
