package daemon

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// principal is who a request or an SSH connection is: an operator (tenant
// nil: the whole root, or the static scope) or a tenant, and the scope it
// works in (relative to the root, normalized; "" is the whole root).
type principal struct {
	tenant *Tenant
	scope  string
}

// auth is the daemon's one authentication: it compares the SHA-256 of a
// presented token in constant time with the operator token's and every
// tenant's, without stopping at a match (so the time taken tells neither
// whether nor with whom a token matched), then picks the match.
type auth struct {
	operator    bool // an operator token is configured
	operatorSum [32]byte
}

func newAuth(token string) auth {
	if token == "" {
		return auth{}
	}
	return auth{operator: true, operatorSum: sha256.Sum256([]byte(token))}
}

// presentedTokens returns the tokens r presents: "Authorization: Bearer
// <t>" (one header, exactly that form) and ?token=<t> (one value); an
// empty token is no token.
func presentedTokens(r *http.Request) (header, query string, hasHeader, hasQuery bool) {
	if vals := r.Header.Values("Authorization"); len(vals) == 1 {
		if t, ok := strings.CutPrefix(vals[0], "Bearer "); ok && t != "" {
			header, hasHeader = t, true
		}
	}
	if vals, ok := r.URL.Query()["token"]; ok && len(vals) == 1 && vals[0] != "" {
		query, hasQuery = vals[0], true
	}
	return
}

// authenticate returns the principal of r (its scope before any
// X-Scope-Path) from the bearer header or ?token=, or false when neither
// is a valid token. Without an operator token and without tenants every
// request is the operator's.
func (s *Server) authenticate(r *http.Request) (principal, bool) {
	p, ok := s.authenticateToken(r)
	if ok && p.tenant != nil {
		requestInfoFrom(r.Context()).setTenant(p.tenant.name)
	}
	return p, ok
}

// authenticateToken is authenticate without recording the tenant.
func (s *Server) authenticateToken(r *http.Request) (principal, bool) {
	set := s.tenants.Load()
	if !s.auth.operator && set == nil {
		return principal{scope: s.staticScope}, true
	}
	header, query, hasHeader, hasQuery := presentedTokens(r)
	if hasHeader {
		if p, ok := s.match(header, set); ok {
			return p, true
		}
	}
	if hasQuery {
		return s.match(query, set)
	}
	return principal{}, false
}

// match compares token with every known token hash.
func (s *Server) match(token string, set *tenantSet) (principal, bool) {
	sum := sha256.Sum256([]byte(token))
	op := 0
	if s.auth.operator {
		op = subtle.ConstantTimeCompare(sum[:], s.auth.operatorSum[:])
	}
	found := -1
	if set != nil {
		for i, t := range set.list {
			eq := subtle.ConstantTimeCompare(sum[:], t.hash[:])
			found = subtle.ConstantTimeSelect(eq, i, found)
		}
	}
	switch {
	case op == 1:
		return principal{scope: s.staticScope}, true
	case found >= 0:
		t := set.list[found]
		return principal{tenant: t, scope: t.scope}, true
	}
	return principal{}, false
}

// authEnabled reports whether requests must present a token: an operator
// token or tenants are configured.
func (s *Server) authEnabled() bool { return s.auth.operator || s.cfg.TenantsFile != "" }

// principalKey is the request context key of the principal the daemon's
// authentication found.
type principalKey struct{}

type authResult struct {
	p  principal
	ok bool
}

// withPrincipal returns r with the outcome of authenticating it attached.
func withPrincipal(r *http.Request, p principal, ok bool) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, authResult{p, ok}))
}

// requestPrincipal returns the principal attached by withPrincipal, or
// authenticates r when none is (a route called without the daemon's
// middleware, e.g. by a test).
func (s *Server) requestPrincipal(r *http.Request) (principal, bool) {
	if a, ok := r.Context().Value(principalKey{}).(authResult); ok {
		return a.p, a.ok
	}
	return s.authenticate(r)
}
