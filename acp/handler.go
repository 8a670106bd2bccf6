package acp

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// Resolver returns the backend a request works on (the workspace, or the
// request's scope of it) and a function releasing it. The daemon passes one
// that applies its authenticated static or X-Scope-Path scope. An error
// implementing interface{ StatusCode() int } is answered with that status;
// any other error with 400.
type Resolver func(r *http.Request) (b agentbe.Backend, release func(), err error)

// StatusError is an error a Resolver can return to choose the HTTP status
// of its answer (e.g. 400 for an invalid X-Scope-Path, 401 when the daemon
// checks the token there). Detail is shown to the client.
type StatusError struct {
	Status int
	Detail string
}

func (e *StatusError) Error() string { return e.Detail }

// StatusCode reports the HTTP status.
func (e *StatusError) StatusCode() int { return e.Status }

// Defaults for Config's zero fields.
const (
	DefaultMaxFileBytes     int64 = 1 << 30
	DefaultMaxUploadBytes   int64 = 1 << 30
	DefaultMaxUploadEntries       = 10000
	DefaultKeepAlive              = 15 * time.Second
	DefaultAttachWait             = 5 * time.Second
	DefaultMaxConfigBytes         = 1 << 20
)

// Config configures NewHandler. Only Resolve is required; the zero value of
// every other field is the safe default.
type Config struct {
	// Resolve gives each request its backend. Required.
	Resolve Resolver
	// Partition, when set, gives each request the partition of server ids
	// it works in (the daemon: one per tenant), e.g. from the identity its
	// authentication established; nil puts every request in the default
	// one.
	Partition func(r *http.Request) Partition
	// Agents is the agent registry; nil means DefaultRegistry().
	Agents *Registry
	// Proxy configures the ACP proxy core (timeouts, replay ring, limits,
	// secret variable names).
	Proxy ProxyConfig
	// MaxFileBytes bounds a PUT /v1/fs/file body (413 beyond). Zero means
	// DefaultMaxFileBytes; negative means no limit.
	MaxFileBytes int64
	// MaxUploadBytes bounds the total size of the files in one
	// upload-batch archive, MaxUploadEntries its number of members. Zero
	// means the defaults.
	MaxUploadBytes   int64
	MaxUploadEntries int
	// KeepAlive is the SSE heartbeat interval. Zero means DefaultKeepAlive
	// (15 s, as the spec says).
	KeepAlive time.Duration
	// AttachWait is how long GET /v1/acp/{server_id} waits for an instance
	// that does not exist yet (clients open the stream concurrently with
	// their first POST). Zero means DefaultAttachWait.
	AttachWait time.Duration
	// Name is reported by GET /; empty means "Agent Backend".
	Name string
	// Logger receives diagnostics; nil means slog.Default().
	Logger *slog.Logger
}

// Handler serves the ACP proxy and HTTP file API. Close stops every agent
// process.
type Handler struct {
	cfg    Config
	agents *Registry
	proxy  *Proxy
	mux    *http.ServeMux
	cfgMu  sync.Mutex // serialises config-file read-modify-write
}

// NewHandler returns the handler for cfg. It fails when cfg.Resolve is nil.
func NewHandler(cfg Config) (*Handler, error) {
	if cfg.Resolve == nil {
		return nil, errors.New("acp: Config.Resolve is required")
	}
	if cfg.Logger != nil && cfg.Proxy.Logger == nil {
		cfg.Proxy.Logger = cfg.Logger
	}
	h := &Handler{cfg: cfg, agents: cfg.Agents, proxy: NewProxy(cfg.Proxy), mux: http.NewServeMux()}
	if h.agents == nil {
		h.agents = DefaultRegistry()
	}
	h.routes()
	return h, nil
}

// Proxy returns the handler's proxy core.
func (h *Handler) Proxy() *Proxy { return h.proxy }

// Close stops every agent process (each within ProxyConfig.StopWait) and
// refuses new instances.
func (h *Handler) Close() error {
	h.proxy.Close()
	return nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) routes() {
	m := h.mux
	m.HandleFunc("GET /{$}", h.root)
	m.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	m.HandleFunc("GET /v1/acp", h.acpList)
	m.HandleFunc("POST /v1/acp/{server_id}", h.acpPost)
	m.HandleFunc("GET /v1/acp/{server_id}", h.acpStream)
	m.HandleFunc("DELETE /v1/acp/{server_id}", h.acpDelete)
	m.HandleFunc("GET /v1/agents", h.agentList)
	m.HandleFunc("GET /v1/agents/{agent}", h.agentGet)
	m.HandleFunc("POST /v1/agents/{agent}/install", h.agentInstall)
	m.HandleFunc("GET /v1/fs/entries", h.fsEntries)
	m.HandleFunc("GET /v1/fs/file", h.withPath(h.fsRead))
	m.HandleFunc("PUT /v1/fs/file", h.withPath(h.fsWrite))
	m.HandleFunc("DELETE /v1/fs/entry", h.withPath(h.fsDelete))
	m.HandleFunc("POST /v1/fs/mkdir", h.withPath(h.fsMkdir))
	m.HandleFunc("POST /v1/fs/move", h.fsMove)
	m.HandleFunc("GET /v1/fs/stat", h.withPath(h.fsStat))
	m.HandleFunc("POST /v1/fs/upload-batch", h.fsUpload)
	for _, kind := range []configKind{mcpConfig, skillsConfig} {
		m.HandleFunc("GET /v1/config/"+kind.name, h.configRoute(kind, h.configGet))
		m.HandleFunc("PUT /v1/config/"+kind.name, h.configRoute(kind, h.configPut))
		m.HandleFunc("DELETE /v1/config/"+kind.name, h.configRoute(kind, h.configDelete))
	}
	m.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, notFound("no route for "+r.Method+" "+r.URL.Path))
	})
}

func (h *Handler) root(w http.ResponseWriter, r *http.Request) {
	name := h.cfg.Name
	if name == "" {
		name = "Agent Backend"
	}
	writeJSON(w, http.StatusOK, map[string]string{"name": name,
		"docs": "https://github.com/agentbe/agent-backend"})
}

// backend resolves the request's backend, answering the error itself.
func (h *Handler) backend(w http.ResponseWriter, r *http.Request) (agentbe.Backend, func(), bool) {
	b, release, err := h.cfg.Resolve(r)
	if err != nil {
		status := http.StatusBadRequest
		var sc interface{ StatusCode() int }
		if errors.As(err, &sc) && sc.StatusCode() >= 400 && sc.StatusCode() <= 599 {
			status = sc.StatusCode()
		}
		writeProblem(w, problem(status, "invalid_request", http.StatusText(status), err.Error()))
		return nil, nil, false
	}
	if release == nil {
		release = func() {}
	}
	return b, release, true
}

// partition is the request's partition.
func (h *Handler) partition(r *http.Request) Partition {
	if h.cfg.Partition == nil {
		return Partition{}
	}
	return h.cfg.Partition(r)
}

func (h *Handler) logger() *slog.Logger {
	if h.cfg.Logger != nil {
		return h.cfg.Logger
	}
	return slog.Default()
}

// isJSON reports whether the Content-Type is application/json (parameters
// such as charset allowed).
func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}
