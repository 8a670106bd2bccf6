package sandbox

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbe/agent-backend/internal/procs"
)

// Workspace is where the workspace (the scope root for scoped backends) is
// mounted inside the bwrap sandbox.
const Workspace = "/tmp/agentbe-workspace"

// sysMount is one system directory as found on the host.
type sysMount struct {
	path string // "/usr", "/lib", …
	link string // when the host path is a symbolic link into another mounted directory: its target
}

// bwrapLayout is what the argv builder needs to know about the host; it is
// computed once (hostBwrapLayout) so that building an argv is pure.
type bwrapLayout struct {
	bwrap  string     // absolute path of the bwrap binary
	sys    []sysMount // existing system directories, in mount order
	asRoot bool       // bwrap runs as root (euid 0)
	stage  *etcStage  // private copy of etcFiles; nil: bind them one by one
	etcDir string     // the stage generation to bind at /etc ("" if none)
	// noBindFD: this bwrap predates --bind-fd (0.8.0); see bwrapArgv.
	noBindFD bool
}

// systemDirs are mounted read-only when they exist.
var systemDirs = []string{"/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"}

// etcFiles are the only parts of /etc a sandboxed program sees (read-only,
// each only if it exists): name resolution, users and groups for id/whoami,
// the dynamic linker cache, time zone, TLS trust stores (Debian and RHEL
// layouts) and Debian's alternatives links (awk, editor, …). Not shadow,
// not the rest of /etc. Every entry is a mount, which each spawn pays for.
var etcFiles = []string{
	"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf",
	"/etc/passwd", "/etc/group",
	"/etc/ld.so.cache", "/etc/localtime",
	"/etc/ssl/certs", "/etc/pki/tls/certs", "/etc/pki/ca-trust",
	"/etc/alternatives",
}

// hostBwrapLayout inspects the host's system directories. A directory is
// bound read-only; a symbolic link (merged /usr: /lib -> usr/lib) whose
// target lies inside another system directory is recreated as the same
// link; any other link is bound as the directory it resolves to; a missing
// path is skipped.
func hostBwrapLayout(bwrap string) bwrapLayout {
	l := bwrapLayout{bwrap: bwrap, asRoot: os.Geteuid() == 0}
	var bound []string
	for _, p := range systemDirs {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			if fi.IsDir() {
				l.sys = append(l.sys, sysMount{path: p})
				bound = append(bound, p)
			}
			continue
		}
		target, err1 := os.Readlink(p)
		real, err2 := filepath.EvalSymlinks(p)
		if err1 != nil || err2 != nil {
			continue
		}
		if st, err := os.Stat(real); err != nil || !st.IsDir() {
			continue
		}
		if underAny(real, bound) {
			l.sys = append(l.sys, sysMount{path: p, link: target})
		} else {
			l.sys = append(l.sys, sysMount{path: p})
			bound = append(bound, p)
		}
	}
	return l
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// sandboxDir maps WorkRel (a clean path relative to the workspace) to the
// sandbox. A WorkRel that is not local (never produced by Local, which
// validates Dir) maps to the workspace root.
func sandboxDir(workRel string) string {
	if workRel == "" || workRel == "." || !filepath.IsLocal(workRel) {
		return Workspace
	}
	return path.Join(Workspace, filepath.ToSlash(workRel))
}

// Descriptors of a bwrap launch, in ExtraFiles order: the set-up arguments
// (--args), the seccomp program (--seccomp), the workspace directory
// (--bind-fd) and the pipe on which bwrap reports the sandbox's init
// (--info-fd, see sandboxInit). bwrap closes all four before it starts the
// command, so none reaches the sandbox (an open directory of the host would
// let a command climb out with openat(fd, "..")).
const (
	bwrapArgsFD      = 3
	bwrapSeccompFD   = 4
	bwrapWorkspaceFD = 5
	bwrapInfoFD      = 6
)

// bwrapArgv is the visible command line of a sandbox: the set-up comes
// through the --args descriptor, so neither the host's layout (workspace
// path, /etc stage) nor the command's environment appears in the
// /proc/1/cmdline that sandboxed programs can read (pid 1 there is bwrap's
// reaper, a fork of this very command line), nor in the host's ps.
//
// A bwrap older than 0.8.0 has no --bind-fd: the workspace is then bound
// from /proc/self/fd/5, which names the same open directory, but bwrap
// leaves that descriptor open in the command it starts. A fixed trampoline
// closes it before any of the command's code runs:
//
//	SHELL -c 'exec 5<&- && exec "$0" "$@"' SHELL -c COMMAND
func bwrapArgv(l bwrapLayout, s Spec) []string {
	argv := []string{l.bwrap, "--args", strconv.Itoa(bwrapArgsFD), "--"}
	if l.noBindFD {
		argv = append(argv, s.Shell, "-c", closeWorkspaceFD)
	}
	return append(argv, s.Shell, "-c", s.Command)
}

// closeWorkspaceFD is the trampoline of bwrapArgv for old bwrap versions.
var closeWorkspaceFD = "exec " + strconv.Itoa(bwrapWorkspaceFD) + `<&- && exec "$0" "$@"`

// bwrapSetup builds the sandbox set-up that bwrap reads from its --args
// descriptor. It is pure: all host knowledge comes from l, and env is the
// command's complete environment.
//
// The workspace is bound from the descriptor of the directory that was
// validated (--bind-fd), never by name: a name is resolved again by bwrap at
// every spawn, and whoever controls a parent entry could have swapped it for
// a symbolic link in between. bwrap itself gets a fixed empty environment
// and runs from "/" (bwrapSandbox.Command): the command's variables (LD_PRELOAD and
// the like included) apply only inside the sandbox, through --clearenv and
// --setenv.
//
// Mount order matters: the tmpfs on /tmp comes before the workspace bind
// at /tmp/agentbe-workspace, otherwise it would hide the workspace.
//
// Hardenings beyond the spec's list:
//   - "--cap-drop ALL": with bwrap running as root (the usual case in a
//     container) the command is the host's root inside a user namespace and
//     would otherwise keep every capability there and could remount the
//     read-only system directories read-write.
//   - For a root caller only, a read-only /proc (otherwise it can write host
//     sysctls such as kernel.core_pattern). For other callers the kernel
//     already refuses those writes, and /proc stays writable for the
//     sandbox's own processes (oom_score_adj and the like).
//   - The seccomp filter of seccomp.go (--seccomp): no set-user-ID or
//     set-group-ID file can be left on the host.
func bwrapSetup(l bwrapLayout, s Spec, env []string) []string {
	argv := make([]string, 0, 40+3*(len(l.sys)+len(etcFiles)+len(env)))
	for _, m := range l.sys {
		if m.link != "" {
			argv = append(argv, "--symlink", m.link, m.path)
		} else {
			argv = append(argv, "--ro-bind", m.path, m.path)
		}
	}
	if l.etcDir != "" {
		argv = append(argv, "--ro-bind", l.etcDir, "/etc")
	} else {
		for _, f := range etcFiles {
			argv = append(argv, "--ro-bind-try", f, f)
		}
	}
	argv = append(argv,
		"--dev", "/dev",
		"--proc", "/proc")
	if l.asRoot {
		argv = append(argv, "--remount-ro", "/proc")
	}
	argv = append(argv,
		"--tmpfs", "/tmp",
		bindFlag(l), bindSource(l), Workspace,
		"--unshare-all")
	if !s.NoNetwork {
		argv = append(argv, "--share-net")
	}
	argv = append(argv,
		"--cap-drop", "ALL",
		"--die-with-parent", "--new-session",
		"--seccomp", strconv.Itoa(bwrapSeccompFD),
		"--info-fd", strconv.Itoa(bwrapInfoFD),
		"--clearenv")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		argv = append(argv, "--setenv", k, v)
	}
	return append(argv, "--chdir", sandboxDir(s.WorkRel))
}

// bindFlag and bindSource bind the workspace descriptor: with --bind-fd,
// or by its /proc/self/fd name on a bwrap that lacks it.
func bindFlag(l bwrapLayout) string {
	if l.noBindFD {
		return "--bind"
	}
	return "--bind-fd"
}

func bindSource(l bwrapLayout) string {
	if l.noBindFD {
		return "/proc/self/fd/" + strconv.Itoa(bwrapWorkspaceFD)
	}
	return strconv.Itoa(bwrapWorkspaceFD)
}

// bwrapEnv is the environment of a sandboxed command: the clean base (see
// commandEnv) with TMPDIR the sandbox's /tmp, the merged backend/scope/call
// env over it, then HOME and PWD set to the working directory.
func bwrapEnv(s Spec) []string {
	dir := sandboxDir(s.WorkRel)
	return commandEnv(s.Inherit, s.Shell, map[string]string{"TMPDIR": "/tmp"}, s.Env, dir)
}

// bwrapSandbox runs every command in a bubblewrap sandbox.
type bwrapSandbox struct {
	layout  bwrapLayout
	seccomp []byte // the filter program, built once
}

func (b bwrapSandbox) Mode() Mode       { return Bwrap }
func (b bwrapSandbox) Launcher() string { return b.layout.bwrap }

func (b bwrapSandbox) Command(ctx context.Context, s Spec) (*Cmd, error) {
	ws, err := s.Root.Open(".")
	if err != nil {
		return nil, err
	}
	l := b.layout.withEtc()
	setup := []byte(strings.Join(bwrapSetup(l, s, bwrapEnv(s)), "\x00") + "\x00")
	// Under cgroup v1 the set-up is the gate: bwrap waits for it before it
	// does anything, and gets it once Started has placed it in its cgroup.
	var args, gate *os.File
	if _, v2 := s.Cgroup.CgroupFD(); s.Cgroup != nil && !v2 {
		args, gate, err = os.Pipe()
	} else {
		args, err = procs.Feed(setup)
	}
	if err != nil {
		ws.Close()
		return nil, err
	}
	closeAll := func() {
		ws.Close()
		args.Close()
		if gate != nil {
			gate.Close()
		}
	}
	filter, err := procs.Feed(b.seccomp)
	if err != nil {
		closeAll()
		return nil, err
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		closeAll()
		filter.Close()
		return nil, err
	}
	c := newCmd(ctx, bwrapArgv(l, s), []string{}, "/", []*os.File{args, filter, ws, infoW}, nil,
		&sandboxInit{info: infoR})
	c.withCgroup(s.Cgroup, gate, setup)
	return c, nil
}

// withEtc returns l with etcDir set to the stage's current generation; if
// staging fails, the files are bound one by one.
func (l bwrapLayout) withEtc() bwrapLayout {
	l.etcDir = ""
	if l.stage != nil {
		if dir, err := l.stage.current(); err == nil {
			l.etcDir = dir
		}
	}
	return l
}
