package sftpjail

import (
	"io/fs"
	"time"
)

// Attrs is the SFTP version 3 file attribute structure. Flags tells which
// fields are present (the attr* bits of the protocol); Mode holds the POSIX
// st_mode, file type bits included.
type Attrs struct {
	Flags        uint32
	Size         uint64
	UID, GID     uint32
	Mode         uint32
	Atime, Mtime uint32
}

// POSIX file type bits of st_mode.
const (
	sIFMT   = 0o170000
	sIFSOCK = 0o140000
	sIFLNK  = 0o120000
	sIFREG  = 0o100000
	sIFBLK  = 0o060000
	sIFDIR  = 0o040000
	sIFCHR  = 0o020000
	sIFIFO  = 0o010000
)

// attrsFromFileInfo fills every v3 field from fi, preferring the raw
// stat_t when the platform provides one.
func attrsFromFileInfo(fi fs.FileInfo) Attrs {
	a := Attrs{
		Flags: attrSize | attrPermissions | attrACModTime,
		Size:  uint64(fi.Size()),
		Mode:  modeToPosix(fi.Mode()),
		Mtime: uint32(fi.ModTime().Unix()),
	}
	a.Atime = a.Mtime
	if st, ok := statOf(fi); ok {
		a.Flags |= attrUIDGID
		a.UID, a.GID = st.uid, st.gid
		a.Mode = st.mode
		a.Atime = uint32(st.atime)
	}
	return a
}

// modeToPosix converts a Go file mode to st_mode.
func modeToPosix(m fs.FileMode) uint32 {
	p := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		p |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		p |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		p |= 0o1000
	}
	switch {
	case m.IsDir():
		p |= sIFDIR
	case m&fs.ModeSymlink != 0:
		p |= sIFLNK
	case m&fs.ModeNamedPipe != 0:
		p |= sIFIFO
	case m&fs.ModeSocket != 0:
		p |= sIFSOCK
	case m&fs.ModeDevice != 0:
		if m&fs.ModeCharDevice != 0 {
			p |= sIFCHR
		} else {
			p |= sIFBLK
		}
	default:
		p |= sIFREG
	}
	return p
}

// FileMode converts the POSIX mode to a Go file mode (0 if absent).
func (a *Attrs) FileMode() fs.FileMode {
	if a.Flags&attrPermissions == 0 {
		return 0
	}
	m := fs.FileMode(a.Mode & 0o777)
	if a.Mode&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if a.Mode&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if a.Mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	switch a.Mode & sIFMT {
	case sIFDIR:
		m |= fs.ModeDir
	case sIFLNK:
		m |= fs.ModeSymlink
	case sIFIFO:
		m |= fs.ModeNamedPipe
	case sIFSOCK:
		m |= fs.ModeSocket
	case sIFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case sIFBLK:
		m |= fs.ModeDevice
	}
	return m
}

// fileInfo is the fs.FileInfo the client returns for SFTP attributes.
type fileInfo struct {
	name  string
	attrs Attrs
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return int64(fi.attrs.Size) }
func (fi *fileInfo) Mode() fs.FileMode  { return fi.attrs.FileMode() }
func (fi *fileInfo) ModTime() time.Time { return time.Unix(int64(fi.attrs.Mtime), 0) }
func (fi *fileInfo) IsDir() bool        { return fi.Mode().IsDir() }

// Sys returns the *Attrs the server sent.
func (fi *fileInfo) Sys() any { return &fi.attrs }
