package sftpjail

import (
	"fmt"
	"io/fs"
	"os/user"
	"strconv"
	"sync"
	"time"
)

// longName formats a directory entry like `ls -l`, as OpenSSH's sftp-server
// does for READDIR: mode string, link count, owner, group, size, date and
// name. Dates within the last six months show the time, older ones the year.
func longName(name string, fi fs.FileInfo, a *Attrs, ids *idNames, now time.Time) string {
	nlink := uint64(1)
	owner, group := strconv.FormatUint(uint64(a.UID), 10), strconv.FormatUint(uint64(a.GID), 10)
	if st, ok := statOf(fi); ok {
		nlink = st.nlink
		owner, group = ids.user(st.uid), ids.group(st.gid)
	}
	mt := fi.ModTime()
	var date string
	if mt.After(now.Add(-182*24*time.Hour-12*time.Hour)) && !mt.After(now) {
		date = mt.Format("Jan _2 15:04")
	} else {
		date = mt.Format("Jan _2  2006")
	}
	return fmt.Sprintf("%s  %3d %-8s %-8s %8d %s %s", modeString(a.Mode), nlink, owner, group, fi.Size(), date, name)
}

// modeString renders st_mode as the ten characters of `ls -l`.
func modeString(m uint32) string {
	var b [10]byte
	switch m & sIFMT {
	case sIFDIR:
		b[0] = 'd'
	case sIFLNK:
		b[0] = 'l'
	case sIFIFO:
		b[0] = 'p'
	case sIFSOCK:
		b[0] = 's'
	case sIFCHR:
		b[0] = 'c'
	case sIFBLK:
		b[0] = 'b'
	default:
		b[0] = '-'
	}
	const rwx = "rwxrwxrwx"
	for i := 0; i < 9; i++ {
		if m&(1<<(8-i)) != 0 {
			b[1+i] = rwx[i]
		} else {
			b[1+i] = '-'
		}
	}
	special := func(pos int, bit uint32, set, setNoExec byte) {
		if m&bit == 0 {
			return
		}
		if b[pos] == 'x' {
			b[pos] = set
		} else {
			b[pos] = setNoExec
		}
	}
	special(3, 0o4000, 's', 'S')
	special(6, 0o2000, 's', 'S')
	special(9, 0o1000, 't', 'T')
	return string(b[:])
}

// idNames caches uid/gid to name lookups for one session; unknown ids are
// shown as numbers.
type idNames struct {
	mu     sync.Mutex
	users  map[uint32]string
	groups map[uint32]string
}

func (c *idNames) user(id uint32) string {
	return c.lookup(&c.users, id, func(s string) (string, error) {
		u, err := user.LookupId(s)
		if err != nil {
			return "", err
		}
		return u.Username, nil
	})
}

func (c *idNames) group(id uint32) string {
	return c.lookup(&c.groups, id, func(s string) (string, error) {
		g, err := user.LookupGroupId(s)
		if err != nil {
			return "", err
		}
		return g.Name, nil
	})
}

func (c *idNames) lookup(m *map[uint32]string, id uint32, f func(string) (string, error)) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if name, ok := (*m)[id]; ok {
		return name
	}
	if *m == nil {
		*m = make(map[uint32]string)
	}
	s := strconv.FormatUint(uint64(id), 10)
	name, err := f(s)
	if err != nil || name == "" {
		name = s
	}
	(*m)[id] = name
	return name
}
