package sandbox

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// killSandboxInit kills the init bwrap reported, through a pidfd, once it
// has made sure the PID still names that process: the PID names a process
// of the sandbox's PID namespace (which lives exactly as long as its init),
// or, where this process may not read another's namespaces, a namespace's
// PID 1 whose parent is the reporting bwrap.
func killSandboxInit(rep bwrapReport, bwrap int) {
	fd, err := unix.PidfdOpen(rep.ChildPID, 0)
	if err != nil {
		return // gone already
	}
	defer unix.Close(fd)
	proc := "/proc/" + strconv.Itoa(rep.ChildPID)
	if link, err := os.Readlink(proc + "/ns/pid"); err == nil {
		if link != "pid:["+strconv.FormatUint(rep.PIDNS, 10)+"]" {
			return
		}
	} else if !initOf(proc, bwrap) {
		return
	}
	unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
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
