// Package readlimit reads a whole stream into memory under a size limit:
// the one rule every whole-file read of the module follows (a backend's
// Read, the kernel-confined fast path, the MCP read tools).
package readlimit

import (
	"io"
	"slices"
)

// TooLarge is the error of ReadAll for a stream holding more than Limit
// bytes. Size is the size hint that exceeded the limit, or -1 when the
// excess was found by reading.
type TooLarge struct {
	Size  int64
	Limit int64
}

func (e *TooLarge) Error() string { return "over the read limit" }

// ReadAll reads r to the end, failing with a *TooLarge once more than limit
// bytes arrive. size (from Stat; -1 when unknown) is only a hint: a size
// over the limit fails before anything is read or allocated, the first
// buffer is never larger than limit+1 bytes and the buffer only grows as
// bytes arrive, whatever Stat claims (a sparse 64 GiB file, a file that
// grows while it is read).
func ReadAll(r io.Reader, size, limit int64) ([]byte, error) {
	if size > limit {
		return nil, &TooLarge{Size: size, Limit: limit}
	}
	c := int64(512)
	if size > 0 {
		c = size + 1
	}
	buf := make([]byte, 0, min(c, limit+1))
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, &TooLarge{Size: -1, Limit: limit}
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
