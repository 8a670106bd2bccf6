package procs

import (
	"os"
	"strconv"
	"syscall"
)

// CloseInheritedOnExec marks close-on-exec every descriptor above stderr
// that this process inherited open without that flag, and returns how many
// it marked. Go opens its own descriptors close-on-exec, but one inherited
// from whatever started the daemon (a supervisor's socket or log pipe, a
// shell's spare descriptor) would otherwise reach every command the daemon
// starts, sandboxed or not: a directory or socket of the host inside the
// sandbox. Only a daemon's main should call it, first thing.
func CloseInheritedOnExec() int {
	dir := "/proc/self/fd"
	if _, err := os.Stat(dir); err != nil {
		dir = "/dev/fd"
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		if cloexecMissing(fd) {
			syscall.CloseOnExec(fd)
			n++
		}
	}
	return n
}

// cloexecMissing reports whether fd is open without FD_CLOEXEC.
func cloexecMissing(fd int) bool {
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	return errno == 0 && flags&syscall.FD_CLOEXEC == 0
}
