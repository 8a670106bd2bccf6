// Package procs is the process plumbing of commands: starting them so that
// they die with this process (Start), in a process group of their own
// (StartOwnGroup, KillGroup), collecting their output with one poll loop
// (OutputPipes) into capped buffers (CapBuffer), feeding them data through
// plain pipes (Feed) and /dev/null (Stdin); and the daemon's process-wide
// policy (LeaveOneCore, CloseInheritedOnExec).
//
// It builds on Linux and macOS, like the packages that import it.
package procs

import (
	"os"
	"runtime"
)

// LeaveOneCore lowers GOMAXPROCS by one, to at least 1, unless the
// GOMAXPROCS environment variable is set; it returns the value in effect.
// Only the main of a network daemon should call it, never a library.
//
// The daemon shares its machine with the agents it serves and the commands
// it runs (child processes, not bound by GOMAXPROCS). With one P per core,
// the Go scheduler's spinning threads compete with them for every core.
// Measured on a 2-vCPU box with the load generator on the same machine
// (internal/cmd/mcpbench, wrk at 32 connections, runs interleaved): MCP
// over HTTP went from 20–24k req/s with a p99 of 4.5–5.5 ms to 27–31k
// req/s with a p99 of 2.7–3.0 ms. Over stdio, one client calling in
// sequence, it made no difference beyond the noise, so the local-only mode
// keeps Go's default. The starting point is the runtime's own default (the
// CPU count, or the container's CPU limit), so cgroup limits are
// respected; the runtime no longer adjusts the value afterwards.
func LeaveOneCore() int {
	_, set := os.LookupEnv("GOMAXPROCS")
	return leaveOneCore(set)
}

func leaveOneCore(envSet bool) int {
	if envSet {
		return runtime.GOMAXPROCS(0)
	}
	n := runtime.GOMAXPROCS(0) - 1
	if n < 1 {
		n = 1
	}
	runtime.GOMAXPROCS(n)
	return n
}
