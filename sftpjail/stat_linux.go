package sftpjail

import (
	"io/fs"
	"syscall"
)

func statAtime(st *syscall.Stat_t, _ fs.FileInfo) int64 { return int64(st.Atim.Sec) }
