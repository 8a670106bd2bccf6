package sftpjail

import (
	"time"
)

// Change is a request that changed, or tried to change, the files under
// the root, as ServerOptions.OnChange hears of it.
type Change struct {
	// Op is "write" (a file opened for writing was closed), "setstat",
	// "remove", "rmdir", "mkdir", "rename", "symlink" or "link".
	Op string
	// Path is the path the client gave; Path2 is the new path of rename
	// and link, and the target of symlink.
	Path, Path2 string
	// Bytes is, for write, what was written through the handle.
	Bytes int64
	// OK reports whether the request succeeded.
	OK bool
	// Start is when the request arrived (for write: when the file was
	// opened); Duration how long it took (for write: until it was closed).
	Start    time.Time
	Duration time.Duration
}

// change is what dispatch learns of a request before running it, to
// report it once answered.
type change struct {
	Change
	h *handle // the handle a CLOSE closes
}

// peekChange returns the Change a request of type typ is about to make,
// read from a copy of its decoder, or false for a request that changes
// nothing (or when no one listens).
func (s *session) peekChange(typ byte, d decoder) (change, bool) {
	if s.onChange == nil {
		return change{}, false
	}
	c := change{Change: Change{Start: time.Now()}}
	switch typ {
	case fxpClose:
		h := s.handles.get(d.bytes())
		if h == nil || !h.writable {
			return change{}, false
		}
		c.Op, c.Path, c.h = "write", h.name, h
	case fxpSetstat:
		c.Op, c.Path = "setstat", d.str()
	case fxpFsetstat:
		h := s.handles.get(d.bytes())
		if h == nil {
			return change{}, false
		}
		c.Op, c.Path = "setstat", h.name
	case fxpRemove:
		c.Op, c.Path = "remove", d.str()
	case fxpRmdir:
		c.Op, c.Path = "rmdir", d.str()
	case fxpMkdir:
		c.Op, c.Path = "mkdir", d.str()
	case fxpRename:
		c.Op, c.Path, c.Path2 = "rename", d.str(), d.str()
	case fxpSymlink:
		c.Op, c.Path2, c.Path = "symlink", d.str(), d.str()
	case fxpExtended:
		switch d.str() {
		case extPosixRename:
			c.Op, c.Path, c.Path2 = "rename", d.str(), d.str()
		case extHardlink:
			c.Op, c.Path, c.Path2 = "link", d.str(), d.str()
		default:
			return change{}, false
		}
	default:
		return change{}, false
	}
	return c, d.ok()
}

// reportChange tells OnChange of c, answered with reply.
func (s *session) reportChange(c change, reply *[]byte) {
	b := *reply
	// length (4), type (1), id (4), status code (4)
	c.OK = len(b) >= 13 && b[4] == fxpStatus && b[9]|b[10]|b[11]|b[12] == 0
	c.Duration = time.Since(c.Start)
	if c.h != nil {
		c.Start, c.Duration = c.h.opened, time.Since(c.h.opened)
		c.Bytes = c.h.written.Load()
	}
	s.onChange(c.Change)
}
