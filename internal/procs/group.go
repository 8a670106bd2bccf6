package procs

import (
	"os/exec"
	"syscall"
)

// StartOwnGroup makes cmd, once started, the leader of a new process
// group, so that KillGroup reaches everything it starts.
func StartOwnGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// KillGroup kills cmd's whole process group (SIGKILL). A descendant that
// left the group (setsid, double fork) survives; a sandbox that has a PID
// namespace of its own ends with its init instead.
func KillGroup(cmd *exec.Cmd) error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
