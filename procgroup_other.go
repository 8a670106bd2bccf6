//go:build !unix

package agentbe

import "os/exec"

// startOwnGroup does nothing where process groups do not exist.
func startOwnGroup(*exec.Cmd) {}

// killGroup kills the command itself.
func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
