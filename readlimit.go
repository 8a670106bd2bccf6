package agentbe

import (
	"errors"
	"io"
	"io/fs"
	"strconv"

	"github.com/agentbe/agent-backend/internal/readlimit"
	"github.com/agentbe/agent-backend/mcp"
)

// DefaultMaxReadBytes is the whole-file read limit of a backend whose
// MaxReadBytes is zero (64 MiB). It is also what the MCP file tools use.
const DefaultMaxReadBytes = mcp.DefaultMaxReadBytes

var (
	// ErrTooLarge: a whole-file read (Read, FS's ReadFile, the MCP read
	// tools) met a file larger than the backend's MaxReadBytes. Open
	// streams files of any size.
	ErrTooLarge = errors.New("file exceeds the read limit")
	// ErrNotRegular: Read or Open met something other than a regular file
	// or directory (a FIFO, a device, a socket), which could block or never
	// end.
	ErrNotRegular = errors.New("not a regular file")
)

// tooLargeError names the limit a read ran into; it matches ErrTooLarge.
type tooLargeError struct {
	size  int64 // the file's size when known, else -1 ("more than limit")
	limit int64
}

func (e *tooLargeError) Error() string {
	lim := strconv.FormatInt(e.limit, 10)
	if e.size < 0 {
		return "file larger than the read limit of " + lim + " bytes (MaxReadBytes); use Open to stream it"
	}
	return "file of " + strconv.FormatInt(e.size, 10) + " bytes exceeds the read limit of " + lim +
		" bytes (MaxReadBytes); use Open to stream it"
}

func (e *tooLargeError) Is(target error) bool { return target == ErrTooLarge }

// effectiveReadLimit turns a configured MaxReadBytes into the limit.
func effectiveReadLimit(n int64) int64 {
	if n <= 0 {
		return DefaultMaxReadBytes
	}
	return n
}

// readAllLimited is readlimit.ReadAll with its failure as a *tooLargeError
// (which matches ErrTooLarge).
func readAllLimited(r io.Reader, size, limit int64) ([]byte, error) {
	b, err := readlimit.ReadAll(r, size, limit)
	if tl, ok := err.(*readlimit.TooLarge); ok {
		return nil, &tooLargeError{size: tl.Size, limit: limit}
	}
	return b, err
}

// checkReadable accepts regular files and directories (reading a directory
// fails later with EISDIR, as it always has) and refuses the rest.
func checkReadable(fi fs.FileInfo) error {
	if m := fi.Mode(); m.IsRegular() || m.IsDir() {
		return nil
	}
	return &fs.PathError{Op: "open", Path: fi.Name(), Err: ErrNotRegular}
}

// MaxReadBytes reports the read limit of the backend the scope wraps.
func (s *Scope) MaxReadBytes() int64 {
	if r, ok := s.inner.(interface{ MaxReadBytes() int64 }); ok {
		return r.MaxReadBytes()
	}
	return DefaultMaxReadBytes
}
