package sandbox

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentbe/agent-backend/internal/procs"
	"golang.org/x/sys/unix"
)

// killSandboxInit kills the init bwrap reported, through a pidfd, once it
// has made sure the PID still names that process (sandboxInitAt). It
// returns once the init and every process of the sandbox have ended.
func killSandboxInit(rep bwrapReport, bwrap int) {
	fd, err := unix.PidfdOpen(rep.ChildPID, 0)
	if err != nil {
		return // gone already
	}
	defer unix.Close(fd)
	if !sandboxInitAt("/proc/"+strconv.Itoa(rep.ChildPID), rep, bwrap) {
		return
	}
	if unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) != nil {
		return
	}
	// The init ends once the kernel has ended every process of its
	// namespace.
	exited(fd, initExitWait)
}

// exited reports whether the process of pidfd fd has ended (its pidfd
// turns readable then), waiting for it at most wait.
func exited(fd int, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		ms := max(0, int(time.Until(deadline).Milliseconds())) // never -1, which waits for ever
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, ms)
		switch {
		case n > 0:
			return true
		case err == unix.EINTR && time.Now().Before(deadline):
		default:
			return false
		}
	}
}

// initExitWait bounds how long killSandboxInit waits for the killed init
// to end.
const initExitWait = 2 * time.Second

// sandboxInitAt reports whether the process at proc is the init rep
// names: a process of the sandbox's PID namespace (which lives exactly as
// long as its init), or, where this process may not read another's
// namespaces, a namespace's PID 1 whose parent is the reporting bwrap.
func sandboxInitAt(proc string, rep bwrapReport, bwrap int) bool {
	if link, err := os.Readlink(proc + "/ns/pid"); err == nil {
		return link == "pid:["+strconv.FormatUint(rep.PIDNS, 10)+"]"
	}
	return initOf(proc, bwrap)
}

// initOf reports whether the process at proc is PID 1 of its own namespace
// and a child of parent.
func initOf(proc string, parent int) bool {
	b, err := os.ReadFile(proc + "/status")
	if err != nil {
		return false
	}
	var ppid, nspid bool
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		switch {
		case k == "PPid" && len(f) == 1:
			ppid = f[0] == strconv.Itoa(parent)
		case k == "NSpid" && len(f) > 1:
			nspid = f[len(f)-1] == "1"
		}
	}
	return ppid && nspid
}

// sandboxCommand returns the process group of the init's child, the
// command bwrap runs, waiting until deadline for the init to start it in
// a session of its own.
// The init is verified as killSandboxInit does; the child by its parent.
func sandboxCommand(rep bwrapReport, bwrap int, deadline time.Time) (int, bool) {
	fd, err := unix.PidfdOpen(rep.ChildPID, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	proc := "/proc/" + strconv.Itoa(rep.ChildPID)
	if !sandboxInitAt(proc, rep, bwrap) {
		return 0, false
	}
	for {
		if exited(fd, 0) {
			return 0, false // an init that ended (a zombie still has its namespace)
		}
		if b, err := os.ReadFile(proc + "/task/" + strconv.Itoa(rep.ChildPID) + "/children"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				// Until it has called setsid (--new-session) the child is
				// still in bwrap's group.
				pid, _ := strconv.Atoi(f[0])
				if ppid, pgid, ok := procs.ParentGroup(pid); ok && ppid == rep.ChildPID && pgid > 0 && pgid != bwrap {
					return pgid, true
				}
			}
		} else {
			return 0, false // the init is gone
		}
		if time.Now().After(deadline) {
			return 0, false
		}
		time.Sleep(time.Millisecond)
	}
}
