//go:build !linux

package sandbox

import "time"

// killSandboxInit has nothing to do: bwrap runs only on Linux.
func killSandboxInit(bwrapReport, int) {}

// sandboxCommand finds nothing: bwrap runs only on Linux.
func sandboxCommand(bwrapReport, int, time.Time) (int, bool) { return 0, false }
