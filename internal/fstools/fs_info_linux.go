package fstools

import (
	"io/fs"
	"syscall"
	"time"
)

// sysTimes reads the access and status-change times of a Linux stat. The
// standard library exposes no birth time, so "created" is the ctime: the
// last time the inode changed, which for files written once is their
// creation.
func sysTimes(fi fs.FileInfo) (created, accessed time.Time, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, time.Time{}, false
	}
	return time.Unix(st.Ctim.Sec, st.Ctim.Nsec), time.Unix(st.Atim.Sec, st.Atim.Nsec), true
}
