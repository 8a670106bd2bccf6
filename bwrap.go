package agentbe

import (
	"os"
	"path"
	"path/filepath"
	"strings"
)

// sandboxWorkspace is where the workspace (the scope root for scoped
// backends) is mounted inside the bwrap sandbox.
const sandboxWorkspace = "/tmp/agentbe-workspace"

// sandboxPath is the PATH of a sandboxed command unless its env sets one.
const sandboxPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

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
		return sandboxWorkspace
	}
	return path.Join(sandboxWorkspace, filepath.ToSlash(workRel))
}

// bwrapArgv builds the bubblewrap command line for s. It is pure: all host
// knowledge comes from l.
//
// Mount order matters: the tmpfs on /tmp comes before the workspace bind
// at /tmp/agentbe-workspace, otherwise it would hide the workspace.
//
// Two hardenings are not in the spec's list but are required when bwrap
// runs as root (the usual case in a container), where the sandboxed command
// is the host's root inside a user namespace: "--cap-drop ALL" (otherwise it
// keeps every capability there and can remount the read-only system
// directories read-write, writing to the host's /usr), and, for a root
// caller only, a read-only /proc (otherwise it can write host sysctls such
// as kernel.core_pattern, or /proc/sysrq-trigger). For other callers the
// kernel already refuses those writes, and /proc stays writable for the
// sandbox's own processes (oom_score_adj and the like).
func bwrapArgv(l bwrapLayout, s sandboxSpec) []string {
	argv := make([]string, 0, 32+3*(len(l.sys)+len(etcFiles)))
	argv = append(argv, l.bwrap)
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
		"--bind", s.HostRoot, sandboxWorkspace,
		"--unshare-all", "--share-net",
		"--cap-drop", "ALL",
		"--die-with-parent", "--new-session",
		"--chdir", sandboxDir(s.WorkRel),
		"--", s.Shell, "-c", s.Command)
	return argv
}

// bwrapEnv is the environment of a sandboxed command: a clean base (no
// variable of the calling process, so no daemon secret leaks in), the
// merged backend/scope/call env over it, then HOME and PWD set to the
// working directory.
func bwrapEnv(s sandboxSpec) []string {
	dir := sandboxDir(s.WorkRel)
	base := map[string]string{"PATH": sandboxPath, "LANG": "C.UTF-8", "TMPDIR": "/tmp"}
	return mergeEnv(nil, base, s.Env, map[string]string{"HOME": dir, "PWD": dir})
}

// bwrapSandbox runs every command in a bubblewrap sandbox.
type bwrapSandbox struct{ layout bwrapLayout }

func (b bwrapSandbox) mode() Isolation { return IsolationBwrap }

func (b bwrapSandbox) command(s sandboxSpec) ([]string, []string, string) {
	return bwrapArgv(b.layout.withEtc(), s), bwrapEnv(s), s.HostRoot
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
