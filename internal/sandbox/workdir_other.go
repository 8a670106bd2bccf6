//go:build !linux

package sandbox

import "os"

// workDirPath names the open directory wd for exec.Cmd.Dir. Without a
// /proc/self/fd there is no race-free way, so it is hostDir, the directory's
// name: a tenant who can swap a parent entry between validation and spawn can
// move the working directory (file operations stay jailed regardless).
func workDirPath(wd *os.File, hostDir string) string { return hostDir }
