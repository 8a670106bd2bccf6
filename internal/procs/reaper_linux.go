package procs

import (
	"bytes"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Orphans. A bwrap sandbox's init outlives bwrap for a moment (bwrap exits
// as soon as the init reports the command's status, without waiting for
// it), so every sandboxed command leaves a zombie that the kernel hands to
// the nearest child subreaper, or to PID 1. Until someone reaps it, it
// still counts against its cgroup's pids limit; where the daemon is PID 1
// (a container without an init) nobody ever does. Commands that leave their
// process group (setsid, double fork) are orphaned the same way.
//
// ReapOrphans makes this process the subreaper of everything it starts and
// reaps each child it did not start itself. It tells the two apart by the
// children Start records, each by PID and start time (a PID alone could
// name a later process); every other child is an orphan. So in a process
// that calls it, every child must be started through Start (Run, Output
// and CombinedOutput included): one started by plain cmd.Start could be
// reaped before its Wait, which then fails.

var (
	reaping    atomic.Bool
	reaped     atomic.Uint64
	childrenMu sync.Mutex
	// children maps the PID of each child Start started, until it is
	// waited for, to its start time and the generation it was recorded in.
	children   = map[int]child{}
	generation uint64 // of the latest record
)

// child is a recorded child: its start time (clock ticks after boot) and
// when it was recorded.
type child struct{ start, gen uint64 }

// reapInterval bounds how long an orphan can stay a zombie should its
// SIGCHLD be missed (signals of one kind coalesce while pending).
const reapInterval = 10 * time.Second

// ReapOrphans makes this process a child subreaper (unless it is PID 1,
// which already is one) and starts reaping orphans, for the life of the
// process. Only the main of the daemon calls it, never a library: see the
// comment above for why every child must then come from Start.
func ReapOrphans() error {
	if os.Getpid() != 1 {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return os.NewSyscallError("prctl(PR_SET_CHILD_SUBREAPER)", err)
		}
	}
	if reaping.Swap(true) {
		return nil
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGCHLD)
	go func() {
		tick := time.NewTicker(reapInterval)
		for full := true; ; {
			reapOnce(full)
			select {
			case <-sig:
				full = false
			case <-tick.C:
				full = true
			}
		}
	}()
	return nil
}

// ReapedOrphans is how many orphans ReapOrphans has reaped so far.
func ReapedOrphans() uint64 { return reaped.Load() }

// startRecorded starts cmd and, while this process reaps orphans, records
// it as a child of its own before the reaper can look at it.
func startRecorded(start func() (int, error)) error {
	if !reaping.Load() {
		_, err := start()
		return err
	}
	childrenMu.Lock()
	defer childrenMu.Unlock()
	pid, err := start()
	if err == nil {
		if st, ok := readProcStat(pid); ok {
			generation++
			children[pid] = child{st.start, generation}
		}
	}
	return err
}

// reapOnce reaps every zombie child that Start did not start, and forgets
// the recorded children that are gone. On a SIGCHLD most calls find no
// zombie at all (os/exec has waited for its own child already) and cost
// one waitid; a full one (every reapInterval) also forgets the records of
// children waited for since. The children are listed and read without
// the lock, which Start holds while it forks and records: a child listed
// was forked before, so it is recorded by the time the lock is taken, and
// a record newer than the listing is kept.
func reapOnce(full bool) {
	if !full {
		var si unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &si, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err != nil || si.Signo == 0 {
			return // no child, or none has exited
		}
	}
	childrenMu.Lock()
	listed := generation
	childrenMu.Unlock()
	self := os.Getpid()
	var kids []procStat
	var pids []int
	for _, pid := range childPIDs(self) {
		if st, ok := readProcStat(pid); ok && st.ppid == self {
			kids, pids = append(kids, st), append(pids, pid)
		}
	}
	childrenMu.Lock()
	defer childrenMu.Unlock()
	live := make(map[int]bool, len(children))
	for i, st := range kids {
		pid := pids[i]
		if c, ours := children[pid]; ours && c.start == st.start {
			live[pid] = true
			continue
		}
		if st.state != 'Z' {
			continue
		}
		var ws unix.WaitStatus
		if got, _ := unix.Wait4(pid, &ws, unix.WNOHANG, nil); got == pid {
			reaped.Add(1)
		}
	}
	for pid, c := range children {
		if !live[pid] && c.gen <= listed {
			delete(children, pid)
		}
	}
}

// childPIDs lists the children of this process: those of each of its
// threads, or, on a kernel without /proc/PID/task/TID/children, every
// process whose parent it is.
func childPIDs(self int) []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var pids []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			return scanChildPIDs(self)
		}
		for _, f := range bytes.Fields(b) {
			if pid, err := strconv.Atoi(string(f)); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// scanChildPIDs lists the processes whose parent is self, the slow way.
func scanChildPIDs(self int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readProcStat(pid); ok && st.ppid == self {
			pids = append(pids, pid)
		}
	}
	return pids
}
