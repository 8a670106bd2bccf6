//go:build linux

package grep

import (
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dirHandle is an open directory of the walk. Files found in it are opened
// relative to it by their single name with O_NOFOLLOW: the kernel resolves
// one component inside this directory and no link, so nothing outside the
// root can be reached (the directory itself was opened through the
// *os.Root). It stays open until the last file job using it is done.
type dirHandle struct {
	f    *os.File
	fd   int
	refs atomic.Int32
}

func openDirHandle(s *search, rel string) (*dirHandle, error) {
	f, err := s.root.Open(rel)
	if err != nil {
		return nil, err
	}
	h := &dirHandle{f: f, fd: int(f.Fd())}
	h.refs.Store(1)
	return h, nil
}

func (h *dirHandle) acquire() { h.refs.Add(1) }

func (h *dirHandle) release() {
	if h.refs.Add(-1) == 0 {
		h.f.Close()
	}
}

// entry is a directory entry with its type from the directory itself.
type entry struct {
	name string
	mode os.FileMode // fs type bits only; ModeIrregular when unknown
}

// list reads the directory's entries (types from d_type, lstat only where
// the file system does not fill it in).
func (h *dirHandle) list() []entry {
	var out []entry
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	for {
		n, err := unix.Getdents(h.fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return out
		}
		b := buf[:n]
		for len(b) >= 19 {
			reclen := int(*(*uint16)(unsafe.Pointer(&b[16])))
			if reclen < 19 || reclen > len(b) {
				break
			}
			typ := b[18]
			nameb := b[19:reclen]
			for i, c := range nameb {
				if c == 0 {
					nameb = nameb[:i]
					break
				}
			}
			b = b[reclen:]
			name := string(nameb)
			if name == "." || name == ".." {
				continue
			}
			var mode os.FileMode
			switch typ {
			case unix.DT_REG:
			case unix.DT_DIR:
				mode = os.ModeDir
			case unix.DT_LNK:
				mode = os.ModeSymlink
			case unix.DT_UNKNOWN:
				var st unix.Stat_t
				if unix.Fstatat(h.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
					continue
				}
				mode = modeOf(st.Mode)
			default:
				mode = os.ModeIrregular
			}
			out = append(out, entry{name, mode})
		}
	}
}

// direntBufs hold getdents buffers between directories.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func modeOf(m uint32) os.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return os.ModeDir
	case unix.S_IFLNK:
		return os.ModeSymlink
	}
	return os.ModeIrregular
}

// fdReader reads a file descriptor opened from a directory listing that
// said "regular file". If something else was swapped in since: a FIFO reads
// as the end (EAGAIN, it was opened non-blocking), and anything that gives
// more than one read's worth of data is checked with fstat first and read
// as the end unless it is a regular file. (Checking every file up front
// would cost a system call per file; most files are read in one call.)
type fdReader struct {
	fd    int
	reads int // reads that returned data
}

func (r *fdReader) Read(p []byte) (int, error) {
	if r.reads == 1 {
		var st unix.Stat_t
		if unix.Fstat(r.fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return 0, errEOF
		}
	}
	for {
		n, err := unix.Read(r.fd, p)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if err == unix.EAGAIN {
				return 0, errEOF
			}
			return 0, err
		}
		if n == 0 {
			return 0, errEOF
		}
		r.reads++
		return n, nil
	}
}

// searchInDir opens name in h (without following a link or blocking) and
// searches it.
func (s *search) searchInDir(fsr *fileSearcher, h *dirHandle, name string, walked bool) fileResult {
	fd, err := unix.Openat(h.fd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return fileResult{}
	}
	defer unix.Close(fd)
	return fsr.search(&fdReader{fd: fd}, walked)
}
