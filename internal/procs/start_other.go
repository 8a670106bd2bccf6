//go:build !linux

package procs

import (
	"os/exec"
	"syscall"
)

// Start starts cmd. Only Linux has a parent-death signal; see
// start_linux.go.
func Start(cmd *exec.Cmd) error { return cmd.Start() }

// DeathSignal does nothing: only Linux has a parent-death signal.
func DeathSignal(*exec.Cmd, syscall.Signal) {}
