package agentbe

import (
	"errors"
	"io"
	"io/fs"
	"slices"
	"strconv"

	"github.com/agentbe/agent-backend/internal/fstools"
)

// DefaultMaxReadBytes is the whole-file read limit of a backend whose
// MaxReadBytes is zero (64 MiB). It is also what the MCP file tools use.
const DefaultMaxReadBytes = fstools.DefaultMaxReadBytes

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

// readAllLimited reads r to the end, failing with a *tooLargeError once more
// than limit bytes arrive. size is the file's size from Stat, used only as a
// hint: a size over the limit fails before anything is read or allocated,
// and the first buffer is never larger than limit+1 bytes whatever Stat
// claims (a sparse 64 GiB file, a file that grows while it is read).
func readAllLimited(r io.Reader, size, limit int64) ([]byte, error) {
	if size > limit {
		return nil, &tooLargeError{size: size, limit: limit}
	}
	c := int64(512)
	if size > 0 {
		c = size + 1
	}
	c = min(c, limit+1)
	buf := make([]byte, 0, c)
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, &tooLargeError{size: -1, limit: limit}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(int64(cap(buf)), limit+1-int64(cap(buf)))))
		}
	}
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
