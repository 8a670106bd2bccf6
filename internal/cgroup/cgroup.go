// Package cgroup confines commands' memory, processes and CPU with Linux
// control groups, version 1 (one hierarchy per controller) or 2 (the
// unified hierarchy).
//
// Every cgroup it makes lies below the cgroup this process was started in
// ("own"), in a directory of its own:
//
//	<own>/agentbe/<group>/<command>   a command of a group (a tenant)
//	<own>/agentbe/<command>           a command of no group
//
// A group's limits bound the sum of its commands; a command's, the
// command alone. Under version 2 the kernel lets only leaves hold
// processes once controllers are enabled below a cgroup, so this process
// first moves itself into the leaf <own>/agentbe.self.
//
// The package only manipulates files: placing the process (before it runs
// a single instruction of the command) is the caller's, through CgroupFD
// under version 2 or Place under version 1.
package cgroup

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Limits are what a cgroup enforces; zero means no limit for that item.
type Limits struct {
	MemoryBytes int64   // memory (and swap) in bytes
	Pids        int     // number of processes (and threads)
	CPU         float64 // cores, as a CFS quota per period
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l.MemoryBytes == 0 && l.Pids == 0 && l.CPU == 0 }

// Validate refuses negative values and a CPU quota the kernel cannot
// express (under a hundredth of a core).
func (l Limits) Validate() error {
	switch {
	case l.MemoryBytes < 0:
		return errors.New("memory limit must not be negative")
	case l.Pids < 0:
		return errors.New("process limit must not be negative")
	case l.CPU < 0:
		return errors.New("cpu limit must not be negative")
	case l.CPU > 0 && l.CPU < 0.01:
		return errors.New("cpu limit must be at least 0.01 cores")
	case l.CPU > 1<<20:
		return errors.New("cpu limit is too large")
	}
	return nil
}

// controllers names the controllers l needs.
func (l Limits) controllers() []Controller {
	var cs []Controller
	if l.MemoryBytes > 0 {
		cs = append(cs, Memory)
	}
	if l.Pids > 0 {
		cs = append(cs, Pids)
	}
	if l.CPU > 0 {
		cs = append(cs, CPU)
	}
	return cs
}

// Controller names a cgroup controller.
type Controller string

// The controllers the package uses.
const (
	Memory Controller = "memory"
	Pids   Controller = "pids"
	CPU    Controller = "cpu"
)

// allControllers is every controller, in a fixed order.
var allControllers = []Controller{Memory, Pids, CPU}

// The limits that stop a command, as Command.Hit names them.
const (
	HitMemory    = "memory"
	HitProcesses = "processes"
)

// cpuPeriod is the CFS period of every quota, in microseconds (the
// kernel's default).
const cpuPeriod = 100000

// cpuQuota is the quota of l.CPU cores per cpuPeriod.
func cpuQuota(cores float64) int64 { return int64(cores*cpuPeriod + 0.5) }

// validName reports whether name is usable as a group name: 1 to 64 of
// [A-Za-z0-9._-], not starting with a dot or "cmd-" (the names of
// commands of no group).
func validName(name string) bool {
	if name == "" || len(name) > 64 || name[0] == '.' || name[0] == '-' || strings.HasPrefix(name, "cmd-") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ErrUnavailable is wrapped by every error that says limits cannot be
// enforced on this host (no cgroup file system, a controller missing, a
// hierarchy not writable).
var ErrUnavailable = errors.New("resource limits cannot be enforced")

func unavailable(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrUnavailable, fmt.Sprintf(format, a...))
}

// parseKeyed reads "key value" lines (memory.events, pids.events,
// cpu.stat, memory.oom_control) and returns key's value, or 0.
func parseKeyed(b []byte, key string) int64 {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
