// Package sandbox runs a command confined: the mechanics of the isolation
// modes (bubblewrap with its /etc stage, seccomp filter, init killer and
// probe; the plain launch of software and none modes with software mode's
// path heuristic), the working directory reached by descriptor, and the
// environment rule every command gets.
//
// The seam: the caller (the root package's Local) validates what it is
// asked to run and describes it as a Spec; a Sandbox turns the Spec into a
// Cmd, an *exec.Cmd ready to start plus the function that kills all of it.
// The caller sets stdio, starts it (procs.Start), calls Started, waits,
// and calls Done. Whatever confines a command more (resource limits, a
// cgroup) belongs here, behind the same Cmd.
//
// The package builds on Linux and macOS; bwrap runs on Linux only.
package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sort"
	"syscall"

	"github.com/agentbe/agent-backend/internal/cgroup"
	"github.com/agentbe/agent-backend/internal/procs"
)

// Mode is an isolation mode's mechanics (the names of the root package's
// Isolation values).
type Mode string

// The modes a Sandbox runs.
const (
	// None runs the shell directly, unconfined.
	None Mode = "none"
	// Software runs the shell directly; the caller applies CheckSoftwarePaths.
	Software Mode = "software"
	// Bwrap runs every command in a bubblewrap sandbox.
	Bwrap Mode = "bwrap"
)

// Spec describes one command for a Sandbox to start.
type Spec struct {
	Shell    string            // absolute path of the resolved shell
	Command  string            // the command line, run with Shell -c
	Root     *os.Root          // the workspace (the scope root for scopes), as validated
	HostRoot string            // its host path, for messages and PWD only: never opened by name
	WorkRel  string            // working directory relative to Root ("." = Root), link-free
	Env      map[string]string // backend < scope < call environment, already merged
	Inherit  bool              // start from the host's environment instead of the clean base
	// NoNetwork gives the command an empty network namespace of its own
	// (bwrap only; the plain modes refuse it).
	NoNetwork bool
	// Cgroup, when not nil, is the cgroup the command runs in: the
	// process is in it before the command's first instruction (created
	// into it under cgroup v2; under v1 placed while bwrap waits for its
	// set-up, or while a gate holds the shell). Kill kills its processes
	// too. The caller made it and closes it once the command has ended.
	Cgroup *cgroup.Command
}

// Sandbox starts commands in one isolation mode. It is safe for
// concurrent use.
type Sandbox interface {
	// Mode reports the isolation mode.
	Mode() Mode
	// Launcher is the absolute path of the program that sets the sandbox
	// up ("" when the shell runs directly).
	Launcher() string
	// Command prepares the command s describes; ctx ends it (Cmd.Kill).
	Command(ctx context.Context, s Spec) (*Cmd, error)
}

// Cmd is a command a Sandbox prepared. Cmd is ready to start: argv (an
// absolute path first), its whole environment, its working directory, the
// descriptors it inherits, a process group of its own, and Cancel set to
// Kill. The caller sets its stdio and WaitDelay, starts it, then calls
// Started; once it has been waited for (or was never started), Done.
type Cmd struct {
	Cmd *exec.Cmd

	// files are the parent's copies of what the command inherits, or must
	// stay open until it has started.
	files []*os.File
	// init, under bwrap, kills the sandbox's init.
	init *sandboxInit
	// cg is the command's cgroup (nil for none); gate, when not nil, holds
	// the command until Started has placed it in cg, and gets gateData
	// then.
	cg       *cgroup.Command
	gate     *os.File
	gateData []byte
}

// newCmd builds the Cmd of a launch.
func newCmd(ctx context.Context, argv, env []string, dir string, extra, keep []*os.File, init *sandboxInit) *Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir, cmd.ExtraFiles = env, dir, extra
	procs.StartOwnGroup(cmd)
	c := &Cmd{Cmd: cmd, files: append(append([]*os.File(nil), extra...), keep...), init: init}
	cmd.Cancel = c.Kill
	return c
}

// Started closes the parent's copies of the command's files; call it once
// Start has returned, whether or not it succeeded. A command held at its
// gate is first placed in its cgroup and let go; if it cannot be placed,
// it is killed and the error returned.
func (c *Cmd) Started() error {
	for _, f := range c.files {
		f.Close()
	}
	c.files = nil
	if c.gate == nil {
		return nil
	}
	gate := c.gate
	c.gate = nil
	defer gate.Close()
	if c.Cmd.Process == nil {
		return nil
	}
	if err := c.cg.Place(c.Cmd.Process.Pid); err != nil {
		c.Kill()
		return err
	}
	// A command that died meanwhile closed its end: EPIPE, and Wait
	// reports how it ended.
	_, _ = gate.Write(c.gateData)
	return nil
}

// withCgroup runs c in cg: created into it (cgroup v2), or held at a gate
// until Started has placed it there (v1). gate is the write end of the
// pipe the command waits on (nil: the caller gives none because v2 needs
// none); it gets data once the command is placed.
func (c *Cmd) withCgroup(cg *cgroup.Command, gate *os.File, data []byte) {
	c.cg = cg
	if cg == nil {
		return
	}
	if fd, ok := cg.CgroupFD(); ok {
		useCgroupFD(c.Cmd, fd)
		return
	}
	c.gate, c.gateData = gate, data
}

// Kill kills the running command: under bwrap the sandbox's init first
// (which ends every process of the sandbox, see sandboxInit), then the
// command's process group. A descendant that left the group (setsid) in
// the modes without a sandbox survives.
func (c *Cmd) Kill() error {
	c.init.kill(c.Cmd.Process.Pid)
	err := procs.KillGroup(c.Cmd)
	if c.cg != nil {
		c.cg.Kill()
	}
	return ended(err)
}

// ended treats a process group that has no process left (ESRCH: the
// command ended, or the sandbox's end took bwrap with it and bwrap was
// reaped) as signalled: what a signal is for has happened.
func ended(err error) error {
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Signal sends sig to the command's process group. Under bwrap that is
// the group of the command inside the sandbox, not bwrap's: bwrap passes
// no signal on and dies of most, which kills the sandbox outright, and a
// bwrap that dies before it has let the sandbox's init go leaves that init
// waiting forever. A sandboxed command not yet started within moments (or
// a SIGKILL) is killed as Kill does.
func (c *Cmd) Signal(sig syscall.Signal) error {
	if sig == syscall.SIGKILL {
		return c.Kill()
	}
	if c.init == nil {
		return ended(syscall.Kill(-c.Cmd.Process.Pid, sig))
	}
	pgid, ok := c.init.command(c.Cmd.Process.Pid)
	if !ok {
		return c.Kill()
	}
	return ended(syscall.Kill(-pgid, sig))
}

// Close kills the command (see Kill); it lets a backend's Destroy end the
// commands it tracks.
func (c *Cmd) Close() error {
	_ = c.Kill()
	return nil
}

// Done releases what the command kept once it has ended (and closes its
// files, if Started was not called).
func (c *Cmd) Done() {
	c.Started()
	if c.gate != nil {
		c.gate.Close()
		c.gate = nil
	}
	if c.Cmd.ProcessState != nil {
		c.init.reap(c.Cmd.Process.Pid)
	}
	c.init.close()
}

// DefaultPath is the PATH of every command unless its environment sets one.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// commandEnv is the one environment rule of every launcher (bwrap, software,
// none; the daemon's SSH sessions go through the same Exec). A command gets
// a clean base, never the calling process's variables (so no daemon secret,
// such as an auth token, reaches it):
//
//	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
//	LANG=C.UTF-8  TERM=dumb  SHELL=<the shell>  TMPDIR=<mode's temporary directory>
//
// then the backend's, the scope's and the call's Env (later ones winning),
// then HOME and PWD set to the working directory. With inherit
// (Spec.Inherit) the base is the calling process's environment instead.
// SHELL is in the base because without it bash looks its user up at every
// start to set it (getpwuid: the nscd socket, nsswitch.conf, /etc/passwd),
// which was about 5% of Exec("true") paired with a raw spawn.
func commandEnv(inherit bool, shell string, base, env map[string]string, dir string) []string {
	b := map[string]string{"PATH": DefaultPath, "LANG": "C.UTF-8", "TERM": "dumb", "SHELL": shell}
	var host []string
	if inherit {
		b, host = nil, os.Environ()
	}
	return mergeEnv(host, b, base, env, map[string]string{"HOME": dir, "PWD": dir})
}

// mergeEnv overlays each map onto base (KEY=VALUE entries), later maps
// winning, and returns a sorted, de-duplicated environment.
func mergeEnv(base []string, overlays ...map[string]string) []string {
	m := make(map[string]string, len(base)+8)
	for _, kv := range base {
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				m[kv[:i]] = kv[i+1:]
				break
			}
		}
	}
	for _, o := range overlays {
		for k, v := range o {
			m[k] = v
		}
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
