package sftpjail

import (
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
	"time"
)

// openFlags translates SFTP pflags bitwise to os.OpenFile flags.
func openFlags(pflags uint32) int {
	var f int
	switch {
	case pflags&flagRead != 0 && pflags&flagWrite != 0:
		f = os.O_RDWR
	case pflags&flagWrite != 0:
		f = os.O_WRONLY
	default:
		f = os.O_RDONLY
	}
	if pflags&flagAppend != 0 {
		f |= os.O_APPEND
	}
	if pflags&flagCreat != 0 {
		f |= os.O_CREATE
	}
	if pflags&flagTrunc != 0 {
		f |= os.O_TRUNC
	}
	if pflags&flagExcl != 0 {
		f |= os.O_EXCL
	}
	return f
}

// open serves OPEN. With CREAT the missing parent directories are created
// first (mode 0755); a write without CREAT needs an existing file, hence
// existing parents, so nothing is created for it. The file mode is the
// permissions attribute when given (setuid/setgid/sticky dropped), else
// 0644, both subject to the process umask as open(2) is.
func (s *session) open(id uint32, d *decoder) *[]byte {
	name := d.str()
	pflags := d.u32()
	a := d.attrs()
	if !d.ok() {
		return nil
	}
	rel, err := s.follow(name)
	if err != nil {
		return errPacket(id, "open", name, err)
	}
	mode := fs.FileMode(0o644)
	if a.Flags&attrPermissions != 0 {
		mode = fs.FileMode(a.Mode & 0o777)
	}
	if pflags&flagCreat != 0 && rel != "." {
		if dir := path.Dir(rel); dir != "." {
			s.root.MkdirAll(dir, 0o755) // a failure shows in OpenFile's error
		}
	}
	f, err := s.root.OpenFile(rel, openFlags(pflags)|syscall.O_NONBLOCK, mode)
	if err != nil {
		return errPacket(id, "open", name, err)
	}
	// O_NONBLOCK keeps a FIFO from stalling the session at open; regular
	// files ignore it, and it is cleared again for everything else.
	regular := false
	if fi, err := f.Stat(); err == nil && fi.Mode()&fs.ModeNamedPipe == 0 {
		regular = fi.Mode().IsRegular()
		if rc, err := f.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { syscall.SetNonblock(int(fd), false) })
		}
	}
	h := &handle{f: f, regular: regular, append: pflags&flagAppend != 0, name: name, rel: rel}
	if s.onChange != nil && pflags&(flagWrite|flagAppend|flagCreat|flagTrunc) != 0 {
		h.writable, h.opened = true, time.Now()
	}
	return s.handleReply(id, "open", h)
}

// handleReply registers h and answers with its handle; when the session
// holds as many handles as allowed, h's file is closed and op fails.
func (s *session) handleReply(id uint32, op string, h *handle) *[]byte {
	hid, err := s.handles.add(h)
	if err != nil {
		h.f.Close()
		return errPacket(id, op, h.name, err)
	}
	return handlePacket(id, hid)
}

// close serves CLOSE for files and directories.
func (s *session) close(id uint32, d *decoder) *[]byte {
	hid := d.bytes()
	if !d.ok() {
		return nil
	}
	h := s.handles.remove(hid)
	if h == nil {
		return statusPacket(id, statusFailure, errBadHandle.Error())
	}
	if err := h.f.Close(); err != nil {
		return errPacket(id, "close", h.name, err)
	}
	return okPacket(id)
}

// read serves READ: DATA with what was read, EOF status at the end.
// The data is read straight into the reply buffer.
func (s *session) read(id uint32, h *handle, off uint64, n int) *[]byte {
	bp := getBuf()
	b := startPacket(*bp, fxpData)
	b = appendU32(b, id)
	b = appendU32(b, 0)
	hdr := len(b)
	if cap(b) < hdr+n {
		growBuf(bp, hdr+n)
		b = startPacket(*bp, fxpData)
		b = appendU32(b, id)
		b = appendU32(b, 0)
	}
	var got int
	var err error
	if off > 1<<62 {
		err = io.EOF
	} else {
		got, err = h.f.ReadAt(b[hdr:hdr+n], int64(off))
	}
	if got == 0 {
		*bp = b[:0]
		putBuf(bp)
		if err == nil || err == io.EOF {
			return statusPacket(id, statusEOF, "EOF")
		}
		return errPacket(id, "read", h.name, err)
	}
	b = b[:hdr+got]
	putU32(b[hdr-4:], uint32(got))
	*bp = finishPacket(b)
	return bp
}

// write serves WRITE. On an append handle the offset is ignored and the
// data goes to the end of the file, as OpenSSH's sftp-server does.
func (s *session) write(id uint32, h *handle, off uint64, data []byte) *[]byte {
	var err error
	switch {
	case h.append:
		_, err = h.f.Write(data)
	case off > 1<<62:
		err = syscall.EFBIG
	default:
		_, err = h.f.WriteAt(data, int64(off))
	}
	if err != nil {
		return errPacket(id, "write", h.name, err)
	}
	if h.writable {
		h.written.Add(int64(len(data)))
	}
	return okPacket(id)
}

// fstat serves FSTAT.
func (s *session) fstat(id uint32, d *decoder) *[]byte {
	hid := d.bytes()
	if !d.ok() {
		return nil
	}
	h := s.handles.get(hid)
	if h == nil {
		return statusPacket(id, statusFailure, errBadHandle.Error())
	}
	fi, err := h.f.Stat()
	if err != nil {
		return errPacket(id, "fstat", h.name, err)
	}
	a := attrsFromFileInfo(fi)
	return attrsPacket(id, &a)
}

// fsetstat serves FSETSTAT like SETSTAT, on the open file.
func (s *session) fsetstat(id uint32, d *decoder) *[]byte {
	hid := d.bytes()
	a := d.attrs()
	if !d.ok() {
		return nil
	}
	h := s.handles.get(hid)
	if h == nil {
		return statusPacket(id, statusFailure, errBadHandle.Error())
	}
	if a.Flags&attrSize != 0 {
		if err := h.f.Truncate(int64(a.Size & (1<<62 - 1))); err != nil {
			return errPacket(id, "setstat", h.name, err)
		}
	}
	if a.Flags&attrPermissions != 0 {
		if err := h.f.Chmod(fs.FileMode(a.Mode & 0o777)); err != nil {
			return errPacket(id, "setstat", h.name, err)
		}
	}
	if a.Flags&attrACModTime != 0 {
		if rc, err := h.f.SyscallConn(); err == nil {
			tv := []syscall.Timeval{{Sec: int64(a.Atime)}, {Sec: int64(a.Mtime)}}
			rc.Control(func(fd uintptr) { syscall.Futimes(int(fd), tv) }) // errors ignored: best effort, as docs/daemon.md (SFTP) says
		}
	}
	if a.Flags&attrUIDGID != 0 {
		h.f.Chown(int(a.UID), int(a.GID)) // errors ignored: best effort, as docs/daemon.md (SFTP) says
	}
	return okPacket(id)
}

// setstat serves SETSTAT: size (truncate), permissions (chmod; setuid,
// setgid and sticky bits are never set), times and owner (errors ignored).
func (s *session) setstat(id uint32, d *decoder) *[]byte {
	name := d.str()
	a := d.attrs()
	if !d.ok() {
		return nil
	}
	rel, err := s.follow(name)
	if err != nil {
		return errPacket(id, "setstat", name, err)
	}
	if a.Flags&attrSize != 0 {
		f, err := s.root.OpenFile(rel, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			err = f.Truncate(int64(a.Size & (1<<62 - 1)))
			f.Close()
		}
		if err != nil {
			return errPacket(id, "setstat", name, err)
		}
	}
	if a.Flags&attrPermissions != 0 {
		if err := s.root.Chmod(rel, fs.FileMode(a.Mode&0o777)); err != nil {
			return errPacket(id, "setstat", name, err)
		}
	}
	if a.Flags&attrACModTime != 0 {
		s.root.Chtimes(rel, time.Unix(int64(a.Atime), 0), time.Unix(int64(a.Mtime), 0)) // errors ignored
	}
	if a.Flags&attrUIDGID != 0 {
		s.root.Chown(rel, int(a.UID), int(a.GID)) // errors ignored
	}
	return okPacket(id)
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}
