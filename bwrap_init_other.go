//go:build !linux

package agentbe

// killSandboxInit has nothing to do: bwrap runs only on Linux.
func killSandboxInit(bwrapReport, int) {}
