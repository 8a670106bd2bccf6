package daemon

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/wspath"
	"github.com/agentbe/agent-backend/sftpjail"
)

// serveSFTP runs the jailed SFTP server on rw, on the directory of b (the
// session's backend: the workspace, or its scope). It ends when the client
// ends the session or ctx is done.
func (s *Server) serveSFTP(ctx context.Context, rw io.ReadWriteCloser, b agentbe.Backend) error {
	scope := ""
	if sc, ok := b.(*agentbe.Scope); ok {
		scope = sc.Path()
	}
	root, host, err := s.openSFTPRoot(scope)
	if err != nil {
		return err
	}
	defer root.Close()
	stop := context.AfterFunc(ctx, func() { rw.Close() })
	defer stop()
	return sftpjail.Serve(rw, root, &sftpjail.ServerOptions{RootPath: host, OnChange: s.sftpChanged(ctx, scope)})
}

// errScopeLink is returned when the static scope's path goes through a
// symbolic link.
var errScopeLink = errors.New("daemon: the scope directory is reached through a symbolic link")

// openSFTPRoot opens the workspace root, then walks down scope one
// directory at a time without following links (each element is lstat'ed,
// opened, and checked to be the same directory), creating missing ones,
// like the library's scopes do.
func (s *Server) openSFTPRoot(scope string) (*os.Root, string, error) {
	root, err := os.OpenRoot(s.rootDir)
	if err != nil {
		return nil, "", err
	}
	if scope == "" || scope == "." {
		return root, s.rootDir, nil
	}
	sub, err := wspath.MkdirNoFollow(root, scope, 0o755)
	root.Close()
	if errors.Is(err, wspath.ErrLink) || errors.Is(err, syscall.ENOTDIR) {
		return nil, "", errScopeLink
	}
	if err != nil {
		return nil, "", err
	}
	return sub, wspath.Join(s.rootDir, scope), nil
}

// sftpChanged returns the OnChange of an SFTP session of the connection
// ctx belongs to, working in scope: each change is an audit record of
// route sftp. Without an audit log there is nothing to hear.
func (s *Server) sftpChanged(ctx context.Context, scope string) func(sftpjail.Change) {
	if s.audit == nil {
		return nil
	}
	return func(c sftpjail.Change) {
		r := s.auditStartOn(ctx, routeSFTP, c.Op, c.Start, c.Duration, c.OK, &scope)
		if r == nil {
			return
		}
		r.str("path", c.Path)
		if c.Path2 != "" {
			r.str("path2", c.Path2)
		}
		if c.Op == "write" {
			r.num("bytes", c.Bytes)
		}
		s.auditEnd(r)
	}
}
