//go:build !linux && !darwin

package sftpjail

import (
	"io/fs"
	"syscall"
)

// statAtime falls back to the modification time where the stat_t layout
// is not spelled out here.
func statAtime(_ *syscall.Stat_t, fi fs.FileInfo) int64 { return fi.ModTime().Unix() }
