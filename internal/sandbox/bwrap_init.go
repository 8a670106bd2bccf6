package sandbox

import (
	"bytes"
	"encoding/json"
	"os"
	"sync"
	"time"
)

// sandboxInit finds and kills the init of a bwrap sandbox (its PID 1; the
// command runs below it), which killing bwrap's process group does not
// reach: it calls setsid (--new-session) while it sets the sandbox up, and
// binds its death to bwrap's (--die-with-parent) only once that set-up is
// done. A command cancelled in between lost its bwrap and left the init to
// run it to its end with parent PID 1.
//
// bwrap reports the init's PID and its PID namespace on --info-fd as soon
// as it has cloned it, before the init is let go; the report is read only
// when a kill is due, so commands that end on their own pay one pipe.
//
// What remains is bwrap's own: a daemon killed outright (SIGKILL) in that
// same moment of a sandbox's set-up takes bwrap with it (procs.Start) but
// not the init, which nothing alive then knows of.
type sandboxInit struct {
	mu     sync.Mutex
	info   *os.File // read end of --info-fd; nil once closed
	killed bool
	// rep is bwrap's report once read (read says whether it was).
	rep  bwrapReport
	read bool
	ok   bool
}

// initReportWait bounds how long kill waits for bwrap's report: bwrap
// writes it within moments of its start, or exits without one.
const initReportWait = 2 * time.Second

// bwrapReport is what bwrap writes on --info-fd.
type bwrapReport struct {
	ChildPID int    `json:"child-pid"`
	PIDNS    uint64 `json:"pid-namespace"`
}

// kill kills the sandbox's init, and with it every process of the sandbox
// (the kernel ends a PID namespace with its init); bwrap is the process
// that reported it. Call it before killing bwrap, so that bwrap does not
// die between cloning the init and letting it go (the init would wait for
// it forever).
func (s *sandboxInit) kill(bwrap int) { s.end(bwrap, initReportWait) }

// end kills the init once, waiting at most wait for bwrap's report.
func (s *sandboxInit) end(bwrap int, wait time.Duration) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killed || s.info == nil {
		return
	}
	s.killed = true
	if rep, ok := s.report(wait); ok {
		killSandboxInit(rep, bwrap)
	}
}

// report reads bwrap's report once, waiting at most wait for it; the
// caller holds s.mu.
func (s *sandboxInit) report(wait time.Duration) (bwrapReport, bool) {
	if !s.read {
		s.read = true
		s.rep, s.ok = readBwrapReport(s.info, time.Now().Add(wait))
	}
	return s.rep, s.ok
}

// command returns the process group of the command the sandbox runs (the
// init's child), once the init has started it; bwrap is the process that
// reported the init. It waits at most initReportWait for the report and
// as long again for the command. ok is false if there is none to signal:
// the sandbox ended or was killed, or did not get so far in time.
func (s *sandboxInit) command(bwrap int) (pgid int, ok bool) {
	if s == nil {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killed || s.info == nil {
		return 0, false
	}
	rep, ok := s.report(initReportWait)
	if !ok {
		return 0, false
	}
	return sandboxCommand(rep, bwrap, time.Now().Add(initReportWait))
}

// reap makes sure the sandbox's init has ended once bwrap has, so that a
// command that has ended has no process left: a bwrap that died of a
// signal leaves its init to die of --die-with-parent a moment later or,
// if it died before it let the init go, to wait for ever. bwrap's report
// is in the pipe by then or never comes; an init that ended before its
// bwrap (the usual way) is found gone by its PID.
func (s *sandboxInit) reap(bwrap int) { s.end(bwrap, initReapWait) }

// initReapWait bounds reap's read of a report that bwrap, having exited,
// wrote already or never will.
const initReapWait = 100 * time.Millisecond

// close releases the report pipe once the command has ended.
func (s *sandboxInit) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.info != nil {
		s.info.Close()
		s.info = nil
	}
}

// readBwrapReport reads bwrap's JSON report from r until it is complete,
// r ends (bwrap exited before it cloned the init) or deadline passes.
func readBwrapReport(r *os.File, deadline time.Time) (bwrapReport, bool) {
	var rep bwrapReport
	r.SetReadDeadline(deadline)
	var buf []byte
	chunk := make([]byte, 512)
	for len(buf) < 4096 {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if t := bytes.TrimSpace(buf); len(t) > 0 && t[len(t)-1] == '}' {
			if json.Unmarshal(t, &rep) == nil {
				return rep, rep.ChildPID > 0 && rep.PIDNS > 0
			}
		}
		if err != nil { // io.EOF, the deadline, or the pipe closed
			return rep, false
		}
	}
	return rep, false
}
