package daemon

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// shareKind is one of the caps each tenant has a share of.
type shareKind int

const (
	shareSSH      shareKind = iota // concurrent /ssh connections
	shareInFlight                  // concurrent /mcp and /v1 requests
	shareUploads                   // concurrent /v1 uploads
	numShares
)

// what names the kind in refusals.
func (k shareKind) what() string {
	return [...]string{"SSH connections", "requests", "uploads"}[k]
}

// limit is t's cap of kind k (0: none of its own).
func (k shareKind) limit(t *Tenant) int {
	switch k {
	case shareSSH:
		return t.limits.SSHConns
	case shareInFlight:
		return t.limits.MCPInFlight
	default:
		return t.limits.UploadsInFlight
	}
}

// shares counts what each tenant holds, by tenant name, across reloads (a
// connection opened before a reload is released after it).
type shares struct {
	mu sync.Mutex
	m  map[string]*[numShares]atomic.Int64
}

func newShares() *shares { return &shares{m: map[string]*[numShares]atomic.Int64{}} }

// acquire takes one unit of k for t, or reports false when t is at its
// cap. release, called once, gives it back. An operator request (t nil)
// or a tenant without a cap of that kind always gets one.
func (sh *shares) acquire(t *Tenant, k shareKind) (release func(), ok bool) {
	if t == nil {
		return func() {}, true
	}
	max := k.limit(t)
	if max <= 0 {
		return func() {}, true
	}
	sh.mu.Lock()
	c := sh.m[t.name]
	if c == nil {
		c = new([numShares]atomic.Int64)
		sh.m[t.name] = c
	}
	sh.mu.Unlock()
	n := &c[k]
	if n.Add(1) > int64(max) {
		n.Add(-1)
		return nil, false
	}
	var once sync.Once
	return func() { once.Do(func() { n.Add(-1) }) }, true
}

// tenantFullMessage is the message of a 429 for t at its cap of k.
func tenantFullMessage(t *Tenant, k shareKind) string {
	return "tenant " + t.name + " has " + strconv.Itoa(k.limit(t)) + " concurrent " + k.what() +
		" already (its limit); retry later"
}

// writeTenantFull answers 429 with Retry-After in the daemon's JSON shape.
func (s *Server) writeTenantFull(w http.ResponseWriter, r *http.Request, t *Tenant, k shareKind) {
	msg := tenantFullMessage(t, k)
	logRefused(s.cfg.Logger, r, msg)
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusTooManyRequests, errorBody{"Too Many Requests", msg})
}

// writeTenantFullProblem answers 429 with Retry-After as a problem
// document (the /v1 routes' shape).
func (s *Server) writeTenantFullProblem(w http.ResponseWriter, r *http.Request, t *Tenant, k shareKind) {
	msg := tenantFullMessage(t, k)
	logRefused(s.cfg.Logger, r, msg)
	w.Header().Set("Retry-After", "1")
	writeProblemJSON(w, http.StatusTooManyRequests, "too_many_requests", "Too Many Requests", msg)
}

// writeProblemJSON sends an application/problem+json answer in the shape
// of the /v1 routes' errors.
func writeProblemJSON(w http.ResponseWriter, status int, kind, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	b, _ := json.Marshal(struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}{"urn:sandbox-agent:error:" + kind, title, status, detail})
	_, _ = w.Write(append(b, '\n'))
}
