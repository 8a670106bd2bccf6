package daemon

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// scopeEnv is the name of the env request with which a session channel
// narrows its scope (see session.narrow).
const scopeEnv = "AGENTBE_SCOPE"

// errOutsideScope is the refusal of a command whose directory (the cd of
// the TypeScript client's prefix) lies outside its session's scope.
var errOutsideScope = errors.New("agentbe daemon: the command's directory is outside the scope of this session")

// channelScope maps a workspace path that names a scope (AGENTBE_SCOPE:
// relative to the root, or absolute under it as the path conventions
// allow) to the scope, validated and normalized by NormalizeScopePath as
// X-Scope-Path is.
func (s *Server) channelScope(p string) (string, error) {
	switch root := s.rootDir; {
	case p == root:
		p = ""
	case root != "/" && strings.HasPrefix(p, root+"/"):
		p = p[len(root)+1:]
	}
	return NormalizeScopePath(p)
}

// dirScope maps the directory of a command's cd prefix (the TypeScript
// client's form, an absolute path under the root, or any other path as
// the path conventions take it) to the directory relative to the root
// ("" for the root itself). It is lexical, as the backend's working
// directory rule is; the scope opened on it then refuses links.
func (s *Server) dirScope(dir string) (string, error) {
	rel, err := wspath.Resolve(s.rootDir, dir)
	if err != nil {
		return "", err
	}
	if rel == "." {
		return "", nil
	}
	return rel, nil
}

// existingDir fails unless rel (relative to the root, "" for the root) is
// an existing directory of the workspace.
func (s *Server) existingDir(ctx context.Context, rel string) error {
	if rel == "" {
		return nil
	}
	fi, err := s.local.Stat(ctx, rel)
	if err == nil && !fi.IsDir() {
		err = syscall.ENOTDIR
	}
	return err
}

// scopeContains reports whether scope is outer or lies inside it, element
// by element ("" is the whole workspace).
func scopeContains(outer, scope string) bool {
	return outer == "" || scope == outer || strings.HasPrefix(scope, outer+"/")
}

// scopeRel is scope (inside outer, see scopeContains) relative to outer,
// "" for outer itself.
func scopeRel(outer, scope string) string {
	switch {
	case outer == "":
		return scope
	case scope == outer:
		return ""
	}
	return scope[len(outer)+1:]
}
