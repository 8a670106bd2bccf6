package sftpjail

import (
	"io/fs"
	"syscall"
)

// rawStat is what the server reads from a stat_t beyond fs.FileInfo.
type rawStat struct {
	uid, gid, mode uint32
	nlink          uint64
	atime          int64 // seconds; statAtime's fallback is the mtime
}

// statOf returns fi's raw stat_t fields when the platform provides them.
func statOf(fi fs.FileInfo) (rawStat, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return rawStat{}, false
	}
	return rawStat{uid: st.Uid, gid: st.Gid, mode: uint32(st.Mode), nlink: uint64(st.Nlink), atime: statAtime(st, fi)}, true
}
