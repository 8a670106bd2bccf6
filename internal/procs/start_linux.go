package procs

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Start starts cmd so that it dies with this process: its parent-death
// signal is SIGKILL (unless cmd.SysProcAttr already names one), set by the
// child between fork and exec, so there is no moment in which the program
// runs without it (bwrap's own --die-with-parent comes only once bwrap has
// set up the sandbox's init; a daemon killed before that left the sandbox
// running with parent PID 1).
//
// For the kernel, a process's parent is the thread that forked it, not the
// whole process, and the parent-death signal fires when that thread ends.
// The Go runtime ends a thread whenever a goroutine locked to it exits, so
// a child forked from an arbitrary goroutine could be killed at any moment
// while the daemon lived on. Start therefore forks every command from one
// goroutine locked, for the life of the process, to its own thread.
func Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cmd.SysProcAttr.Pdeathsig == 0 {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	spawnerOnce.Do(func() {
		spawnReqs = make(chan spawnReq)
		go spawner()
	})
	done := make(chan error, 1)
	spawnReqs <- spawnReq{cmd, done}
	return <-done
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan<- error
}

var (
	spawnerOnce sync.Once
	spawnReqs   chan spawnReq
)

// spawner starts the commands Start is given. It never returns and never
// unlocks its thread, so that thread lives as long as the process.
func spawner() {
	runtime.LockOSThread()
	for r := range spawnReqs {
		r.done <- startRecorded(func() (int, error) {
			if err := r.cmd.Start(); err != nil {
				return 0, err
			}
			return r.cmd.Process.Pid, nil
		})
	}
}

// DeathSignal makes sig, instead of SIGKILL, the signal cmd gets when this
// process dies (see Start); elsewhere than on Linux it does nothing.
func DeathSignal(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = sig
}
