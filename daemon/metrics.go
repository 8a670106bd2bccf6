package daemon

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/metrics"
)

// execResult is the result label of agentbe_exec_total.
type execResult uint8

const (
	execOK      execResult = iota // exited 0
	execFailed                    // exited non-zero, was killed, or could not start
	execLimit                     // a resource limit ended it
	execBlocked                   // the dangerous-command check refused it
	numExecResults
)

var execResultNames = [numExecResults]string{"ok", "failed", "limit", "blocked"}

// classifyExec maps an exec's error to its result.
func classifyExec(err error) execResult {
	switch {
	case err == nil:
		return execOK
	case errors.Is(err, agentbe.ErrDangerous):
		return execBlocked
	case agentbe.CodeOf(err) == agentbe.CodeLimitExceeded:
		return execLimit
	}
	return execFailed
}

// serverMetrics are a Server's metrics, served at GET /metrics. Every
// label comes from a fixed set (routes, status codes, exec results, the
// MCP tool names, and the names of the tenants the operator's file
// loaded), so the number of series is bounded whatever clients send.
type serverMetrics struct {
	reg *metrics.Registry

	requests *metrics.CounterVec // route, code
	// byCode caches requests' children: [route][status code].
	byCode    [numRoutes][600]atomic.Pointer[metrics.Counter]
	duration  [numRoutes]*metrics.Histogram
	bytesIn   [numRoutes]*metrics.Counter
	bytesOut  [numRoutes]*metrics.Counter
	inFlight  *metrics.Gauge
	refused   *metrics.CounterVec // route: refused authentications
	exec      [numExecResults]*metrics.Counter
	execDur   *metrics.Histogram
	sshConns  *metrics.Gauge
	sshIn     *metrics.Counter
	sshOut    *metrics.Counter
	tools     map[string]*[2]*metrics.Counter // tool -> ok, error
	toolOther *[2]*metrics.Counter
	auditRecs *metrics.Counter
	auditDrop *metrics.Counter

	// The per-tenant families and each tenant's children, by name ("" for
	// requests without a tenant: the operator's and refused ones).
	tenantReqs, tenantRefused, tenantThrottled, tenantExec *metrics.CounterVec
	tenants                                                sync.Map // string → *tenantSeries
}

// tenantSeries are one tenant's children of the per-tenant families.
type tenantSeries struct {
	requests  [5]*metrics.Counter // by status class, 1xx to 5xx
	refused   *metrics.Counter
	throttled *metrics.Counter
	exec      [numExecResults]*metrics.Counter
}

// tenant returns the series of tenant name, made on first use. Names come
// from the tenants file (or are ""), never from a client.
func (m *serverMetrics) tenant(name string) *tenantSeries {
	if ts, ok := m.tenants.Load(name); ok {
		return ts.(*tenantSeries)
	}
	ts := &tenantSeries{refused: m.tenantRefused.With(name), throttled: m.tenantThrottled.With(name)}
	for i := range ts.requests {
		ts.requests[i] = m.tenantReqs.With(name, strconv.Itoa(i+1)+"xx")
	}
	for i := range numExecResults {
		ts.exec[i] = m.tenantExec.With(name, execResultNames[i])
	}
	got, _ := m.tenants.LoadOrStore(name, ts)
	return got.(*tenantSeries)
}

// newServerMetrics registers the daemon's metrics. toolNames is the fixed
// set of MCP tools (any other name is counted as "other"); acpInstances
// and panics are read at each scrape.
func newServerMetrics(toolNames []string, version, revision string, acpInstances func() int, panics func() int64) *serverMetrics {
	r := metrics.NewRegistry()
	m := &serverMetrics{reg: r}
	m.requests = r.CounterVec("agentbe_http_requests_total",
		"HTTP requests answered, by route and status code (an /ssh upgrade counts once, when its connection ends).", "route", "code")
	dur := r.HistogramVec("agentbe_http_request_duration_seconds",
		"Time from a request's arrival to the end of its answer, by route (for /ssh: the connection's life).", nil, "route")
	in := r.CounterVec("agentbe_http_request_body_bytes_total", "Bytes of HTTP request bodies read, by route.", "route")
	out := r.CounterVec("agentbe_http_response_body_bytes_total", "Bytes of HTTP response bodies written, by route.", "route")
	for i := range numRoutes {
		if route(i) == routeSFTP {
			continue
		}
		name := route(i).String()
		m.duration[i], m.bytesIn[i], m.bytesOut[i] = dur.With(name), in.With(name), out.With(name)
	}
	m.inFlight = r.Gauge("agentbe_http_requests_in_flight", "HTTP requests being served (open /ssh connections included).")
	m.refused = r.CounterVec("agentbe_auth_refused_total", "Requests refused for a missing or invalid credential, by route.", "route")
	ev := r.CounterVec("agentbe_exec_total",
		"Commands run (MCP exec, SSH exec and shell), by result: ok (exit 0), failed (non-zero exit, killed, or not started), limit (ended by a resource limit), blocked (refused by the dangerous-command check).", "result")
	for i := range numExecResults {
		m.exec[i] = ev.With(execResultNames[i])
	}
	m.execDur = r.Histogram("agentbe_exec_duration_seconds", "Duration of the commands counted by agentbe_exec_total.", nil)
	m.sshConns = r.Gauge("agentbe_ssh_connections", "Open SSH-over-WebSocket connections.")
	m.sshIn = r.Counter("agentbe_ssh_received_bytes_total", "Bytes received on SSH-over-WebSocket connections (SSH protocol, encrypted).")
	m.sshOut = r.Counter("agentbe_ssh_sent_bytes_total", "Bytes sent on SSH-over-WebSocket connections (SSH protocol, encrypted).")
	r.Func("agentbe_acp_instances", "Live ACP agent instances.", metrics.TypeGauge, nil,
		func(emit func(float64, ...string)) { emit(float64(acpInstances())) })
	tv := r.CounterVec("agentbe_mcp_tool_calls_total", "MCP tool calls, by tool and result (ok, or error for an error result).", "tool", "result")
	m.tools = make(map[string]*[2]*metrics.Counter, len(toolNames))
	for _, t := range toolNames {
		m.tools[t] = &[2]*metrics.Counter{tv.With(t, "ok"), tv.With(t, "error")}
	}
	m.toolOther = &[2]*metrics.Counter{tv.With("other", "ok"), tv.With("other", "error")}
	m.auditRecs = r.Counter("agentbe_audit_records_total", "Records written to the audit log.")
	m.auditDrop = r.Counter("agentbe_audit_dropped_total", "Audit records dropped: the audit log could not be written, or fell too far behind.")
	m.tenantReqs = r.CounterVec("agentbe_tenant_http_requests_total",
		"HTTP requests answered, by the tenant of their credential (\"\" for the operator's and for requests without a valid credential) and status class (1xx to 5xx).", "tenant", "class")
	m.tenantRefused = r.CounterVec("agentbe_tenant_auth_refused_total",
		"Requests refused for their credential, by tenant: \"\" for a missing or unknown one, a tenant's name for its token where it does not reach (/metrics).", "tenant")
	m.tenantThrottled = r.CounterVec("agentbe_tenant_throttled_total",
		"HTTP requests answered 429 Too Many Requests (a tenant at one of its caps, or the ACP instance cap), by tenant.", "tenant")
	m.tenantExec = r.CounterVec("agentbe_tenant_exec_total",
		"The commands of agentbe_exec_total, by tenant and result.", "tenant", "result")
	r.Func("agentbe_panics_total", "Panics recovered (each one a bug, logged with its stack).", metrics.TypeCounter, nil,
		func(emit func(float64, ...string)) { emit(float64(panics())) })
	r.Func("agentbe_build_info", "The daemon's version and VCS revision.", metrics.TypeGauge, []string{"version", "revision"},
		func(emit func(float64, ...string)) { emit(1, version, revision) })
	r.RegisterGoRuntime()
	return m
}

// request records one answered HTTP request of tenant.
func (m *serverMetrics) request(rt route, tenant string, status int, d time.Duration, in, out int64) {
	if status < 100 || status > 599 {
		status = 599
	}
	ts := m.tenant(tenant)
	ts.requests[status/100-1].Inc()
	if status == http.StatusTooManyRequests {
		ts.throttled.Inc()
	}
	c := m.byCode[rt][status].Load()
	if c == nil {
		c = m.requests.With(rt.String(), strconv.Itoa(status))
		m.byCode[rt][status].Store(c)
	}
	c.Inc()
	if h := m.duration[rt]; h != nil {
		h.Observe(d.Seconds())
		m.bytesIn[rt].Add(uint64(in))
		m.bytesOut[rt].Add(uint64(out))
	}
}

// toolCall records one MCP tool call.
func (m *serverMetrics) toolCall(tool string, isError bool) {
	c := m.tools[tool]
	if c == nil {
		c = m.toolOther
	}
	i := 0
	if isError {
		i = 1
	}
	c[i].Inc()
}

// execDone records one command of tenant.
func (m *serverMetrics) execDone(tenant string, res execResult, d time.Duration) {
	m.exec[res].Inc()
	m.tenant(tenant).exec[res].Inc()
	m.execDur.Observe(d.Seconds())
}

// metricsRoute answers GET /metrics. Only the operator may read it: the
// one check is operatorAuthorized.
func (s *Server) metricsRoute() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.operatorAuthorized(r) {
			s.authRefused(r, "daemon: /metrics refused", "invalid or missing operator token")
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeJSON(w, http.StatusUnauthorized, errorBody{"Unauthorized", "Invalid or missing authentication token"})
			return
		}
		s.metrics.reg.ServeHTTP(w, r)
	})
}

// operatorAuthorized reports whether r carries the operator's credential
// (the daemon's AuthToken; true when neither a token nor tenants are set).
// It is what /metrics requires: a tenant's credential does not pass it.
func (s *Server) operatorAuthorized(r *http.Request) bool {
	p, ok := s.requestPrincipal(r)
	return ok && p.tenant == nil
}
