//go:build !linux

package sandbox

// killSandboxInit has nothing to do: bwrap runs only on Linux.
func killSandboxInit(bwrapReport, int) {}
