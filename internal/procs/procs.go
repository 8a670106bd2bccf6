// Package procs holds the daemon's process-wide scheduling policy.
package procs

import (
	"os"
	"runtime"
)

// LeaveOneCore lowers GOMAXPROCS by one, to at least 1, unless the
// GOMAXPROCS environment variable is set; it returns the value in effect.
// Only a daemon's main should call it, never a library.
//
// The daemon shares its machine with the agent it serves and the commands
// it runs (which are child processes, not bound by GOMAXPROCS). With one P
// per core, the Go scheduler's spinning threads compete with them for
// every core. Measured on a 2-vCPU box with the load generator on the same
// machine: MCP over HTTP at 32 concurrent clients went from about 21k
// req/s with a p99 of 4.5–5.5 ms to about 30k req/s with a p99 of 2.7–3 ms,
// and MCP over stdio from about 7.5k to 10k sequential calls/s. The runtime's
// own default (the CPU count, or the container's CPU limit) is the starting
// point, so cgroup limits are respected; the runtime no longer adjusts the
// value afterwards.
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
