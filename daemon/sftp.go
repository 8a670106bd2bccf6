package daemon

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/agentbe/agent-backend/internal/wspath"
	"github.com/agentbe/agent-backend/sftpjail"
)

// serveSFTP runs the jailed SFTP server on rw, on the workspace root or,
// under a static scope, on the scope directory. It ends when the client
// ends the session or ctx is done.
func (s *Server) serveSFTP(ctx context.Context, rw io.ReadWriteCloser) error {
	root, host, err := s.openSFTPRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	stop := context.AfterFunc(ctx, func() { rw.Close() })
	defer stop()
	return sftpjail.Serve(rw, root, &sftpjail.ServerOptions{RootPath: host})
}

// errScopeLink is returned when the static scope's path goes through a
// symbolic link.
var errScopeLink = errors.New("daemon: the scope directory is reached through a symbolic link")

// openSFTPRoot opens the workspace root, then, under a static scope, the
// scope directory below it without following links, creating missing
// directories (wspath.MkdirNoFollow, the walk the library's scopes take).
func (s *Server) openSFTPRoot() (*os.Root, string, error) {
	root, err := os.OpenRoot(s.rootDir)
	if err != nil {
		return nil, "", err
	}
	if s.staticScope == "" || s.staticScope == "." {
		return root, s.rootDir, nil
	}
	sub, err := wspath.MkdirNoFollow(root, s.staticScope, 0o755)
	root.Close()
	if errors.Is(err, wspath.ErrLink) || errors.Is(err, syscall.ENOTDIR) {
		return nil, "", errScopeLink
	}
	if err != nil {
		return nil, "", err
	}
	return sub, wspath.Join(s.rootDir, s.staticScope), nil
}
