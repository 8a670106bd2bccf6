package daemon

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	agentbe "github.com/agentbe/agent-backend"
)

// ErrInvalidScope is wrapped by NormalizeScopePath's error. Its text is
// the message clients get in the 400 answer, capital letter included.
var ErrInvalidScope = errors.New("Scope path must not contain path traversal sequences")

// errScopeName is NormalizeScopePath's error for a name that is not
// usable; it matches ErrInvalidScope.
var errScopeName = &scopeNameError{}

type scopeNameError struct{}

func (*scopeNameError) Error() string {
	return "Scope path names must be valid UTF-8 of at most " + strconv.Itoa(maxScopeName) +
		" bytes, without control characters, and must not begin or end with white space"
}
func (*scopeNameError) Is(target error) bool { return target == ErrInvalidScope }

// maxScopeName is the longest name of a scope path (NAME_MAX on Linux).
const maxScopeName = 255

// NormalizeScopePath validates a scope path (from --scopePath or the
// X-Scope-Path header): leading slashes are stripped, and a path with a
// ".." element, or one that normalisation would change ("a//b", "./a",
// "a/./b"), is refused with ErrInvalidScope. A ".." inside a name ("a..b")
// is an ordinary name. A trailing slash is kept by normalisation (as Node's
// path.normalize does) and then dropped.
//
// Each name must moreover be valid UTF-8 of at most 255 bytes without
// control characters, and must not begin or end with white space: such a
// name looks like another one in listings and logs (an HTTP header's own
// outer white space is dropped before it gets here, so " a" arrives as "/ a"
// or "a/ b"), or no file system takes it. Those are refused with an error
// that matches ErrInvalidScope and says so.
//
// The result is "" for the workspace root itself: "", "/", and also "."
// (or "./", "/."), which names the root as much as "/" does and is
// accepted, not refused: it names no traversal. A request scoped to ""
// works on the workspace backend directly; no scope is made for it.
func NormalizeScopePath(p string) (string, error) {
	p = strings.TrimLeft(p, "/")
	if p == "" {
		return "", nil
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", ErrInvalidScope
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", ErrInvalidScope
		}
	}
	for _, seg := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if !usableScopeName(seg) {
			return "", errScopeName
		}
	}
	trimmed := strings.TrimSuffix(p, "/")
	if path.Clean(trimmed) != trimmed {
		return "", ErrInvalidScope
	}
	if trimmed == "." {
		return "", nil
	}
	return trimmed, nil
}

// usableScopeName reports whether seg (one name of a scope path; "" is
// left to the normalisation check) is a name NormalizeScopePath accepts.
func usableScopeName(seg string) bool {
	if len(seg) > maxScopeName || !utf8.ValidString(seg) {
		return false
	}
	for _, r := range seg {
		if unicode.IsControl(r) {
			return false
		}
	}
	if seg == "" {
		return true
	}
	first, _ := utf8.DecodeRuneInString(seg)
	last, _ := utf8.DecodeLastRuneInString(seg)
	return !unicode.IsSpace(first) && !unicode.IsSpace(last)
}

// requestBackend is the one place that decides what a request works on:
// the daemon's workspace, or the scope of it the request is confined to.
// p is who sent it (authenticate): the operator's scope is the static one
// (Config.ScopePath) or "" for the whole workspace, a tenant's is its
// scope. header, the request's X-Scope-Path ("" for none), narrows it (see
// narrowScope). A scope is opened for this request alone, with its
// directory made, without following links (every route expects it to
// exist); release, never nil, lets go of it once the request is done.
//
// An error the request caused (a scope conflicting with the static one, an
// invalid path, a scope outside the tenant's, a link or a file where the
// scope's directory should be) is a *scopeRefusal, which each route
// answers in its own words; any other error is the daemon's own failure.
func (s *Server) requestBackend(ctx context.Context, p principal, header string) (b agentbe.Backend, release func(), err error) {
	scope, refused := s.narrowScope(p, header)
	if refused != nil {
		return nil, nil, refused
	}
	return s.scopeBackend(ctx, p, scope)
}

// scopeBackend is requestBackend for a scope already decided (narrowScope's
// answer, or an SSH channel's scope inside its principal's): the workspace
// for "", else that scope opened with p's options (scopeOptions).
func (s *Server) scopeBackend(ctx context.Context, p principal, scope string) (b agentbe.Backend, release func(), err error) {
	requestInfoFrom(ctx).setScope(scope)
	if scope == "" {
		return s.local, func() {}, nil
	}
	opts, err := s.scopeOptions(p)
	if err != nil {
		return nil, nil, err
	}
	sc, err := s.openScope(ctx, scope, opts)
	if err != nil {
		if refused := openScopeRefusal(err); refused != nil {
			return nil, nil, refused
		}
		return nil, nil, err
	}
	return sc, func() { sc.Destroy(context.Background()) }, nil
}

// scopeRefusal is a scope the daemon refuses a request: 400 over HTTP
// (it conflicts with the static scope, fails NormalizeScopePath, or names
// something that is not a directory of the workspace), or 403 when
// forbidden is set (it lies outside the tenant's scope).
type scopeRefusal struct {
	title, detail string
	forbidden     bool
}

func (r *scopeRefusal) Error() string { return r.detail }

// status is the HTTP status of the refusal.
func (r *scopeRefusal) status() int {
	if r.forbidden {
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

// errOutsideTenant refuses an X-Scope-Path outside the tenant's scope.
var errOutsideTenant = &scopeRefusal{"Forbidden", "Scope path is outside the tenant's scope", true}

// narrowScope returns the scope a request of p works in: p's scope, or
// the request's X-Scope-Path (header) normalized. The operator may name
// any scope unless the daemon has a static one (then any header is a
// conflict); a tenant's header must name its scope or a directory inside
// it, compared name by name after normalization. "" is the whole
// workspace.
func (s *Server) narrowScope(p principal, header string) (string, *scopeRefusal) {
	if header == "" {
		return p.scope, nil
	}
	if p.tenant == nil && (s.staticScope != "" || s.cfg.ScopePath != "") {
		return "", &scopeRefusal{title: "Scope conflict", detail: "Server was started with static scope '" + s.cfg.ScopePath +
			"', but request also specified scope '" + header + "'. Use one or the other, not both."}
	}
	norm, err := NormalizeScopePath(header)
	if err != nil {
		return "", &scopeRefusal{title: "Invalid scope path", detail: err.Error()}
	}
	if !scopeWithin(norm, p.scope) {
		return "", errOutsideTenant
	}
	return norm, nil
}

// openScope creates the scope of one request and its directory: the MCP
// tools, the file API and SFTP expect it to exist (a new file's parent
// must), and the library's scope creates it on its first write only. The
// caller destroys the scope when the request is done; on error nothing is
// left.
func (s *Server) openScope(ctx context.Context, scope string, opts agentbe.ScopeOptions) (*agentbe.Scope, error) {
	sc, err := s.local.Scope(scope, opts)
	if err != nil {
		return nil, err
	}
	if err := sc.Mkdir(internal(ctx), "."); err != nil {
		sc.Destroy(context.Background())
		return nil, err
	}
	return sc, nil
}

// scopeOptions are the options of the scopes p's requests work in: the
// place where a tenant's resource limits and network mode (Tenant.Limits,
// Tenant.Network) become the scope's. The operator's scopes take the
// workspace's.
func (s *Server) scopeOptions(p principal) (agentbe.ScopeOptions, error) {
	if p.tenant == nil {
		return agentbe.ScopeOptions{}, nil
	}
	return s.execs.scopeOptions(p.tenant.name)
}

// openScopeRefusal is the refusal for an openScope error the request
// caused (a traversal, a link, a file where the scope's directory should
// be), or nil for any other failure: the server's own, not a 400.
func openScopeRefusal(err error) *scopeRefusal {
	switch {
	case errors.Is(err, agentbe.ErrPathEscape):
		return &scopeRefusal{title: "Invalid scope path", detail: "Scope path must not contain path traversal sequences"}
	case errors.Is(err, agentbe.ErrScopeLink), errors.Is(err, syscall.ENOTDIR), errors.Is(err, fs.ErrExist):
		return &scopeRefusal{title: "Invalid scope path", detail: "Scope path must name a directory of the workspace, not a symbolic link or a file"}
	case errors.Is(err, syscall.ENAMETOOLONG):
		return &scopeRefusal{title: "Invalid scope path", detail: "Scope path is too long for the file system"}
	}
	return nil
}
