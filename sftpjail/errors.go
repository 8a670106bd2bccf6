package sftpjail

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// statusCode maps an error to an SFTP status code, as docs/daemon.md (SFTP)
// says:
// ENOENT is NO_SUCH_FILE, EACCES is PERMISSION_DENIED, everything else
// FAILURE. A path that escapes the workspace is PERMISSION_DENIED too.
func statusCode(err error) uint32 {
	var errno syscall.Errno
	switch {
	case errors.Is(err, wspath.ErrEscape):
		return statusPermissionDenied
	case errors.As(err, &errno):
		switch errno {
		case syscall.ENOENT:
			return statusNoSuchFile
		case syscall.EACCES:
			return statusPermissionDenied
		}
		return statusFailure
	case errors.Is(err, fs.ErrNotExist):
		return statusNoSuchFile
	}
	return statusFailure
}

// reason is the part of err that names no path: the errno text of a
// PathError or LinkError (whose paths may be host paths), the sentinel's
// text otherwise.
func reason(err error) string {
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	switch {
	case errors.Is(err, wspath.ErrEscape):
		return wspath.ErrEscape.Error()
	case errors.As(err, &pe):
		return reason(pe.Err)
	case errors.As(err, &le):
		return reason(le.Err)
	case errors.As(err, &se):
		return reason(se.Err)
	}
	return err.Error()
}

// Errors the server reports for requests the file system would accept but
// the jail refuses or the protocol forbids.
var (
	errRootBusy    = errors.New("operation not permitted on the workspace root")
	errIsDir       = errors.New("is a directory")
	errNotDir      = errors.New("not a directory")
	errExists      = errors.New("file already exists")
	errBadHandle   = errors.New("invalid handle")
	errLinkOutside = errors.New("link target is outside the workspace")
	errEmptyPath   = errors.New("empty path")
)
