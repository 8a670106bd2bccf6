//go:build unix

package agentbe

import (
	"os/exec"
	"syscall"
)

// startOwnGroup makes the command the leader of a new process group, so
// cancellation can kill everything it started.
func startOwnGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the command's whole process group. A descendant that left
// the group (setsid, double fork) survives in software and none modes; in
// bwrap mode the sandbox's pid namespace dies with it.
func killGroup(cmd *exec.Cmd) error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
