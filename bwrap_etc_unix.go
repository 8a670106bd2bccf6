//go:build unix

package agentbe

import "syscall"

// processGone reports whether no process has the given pid.
func processGone(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }
