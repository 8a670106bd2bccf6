package sandbox

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// argIndex returns the index of the first occurrence of the flag sequence
// seq in argv, or -1.
func argIndex(argv []string, seq ...string) int {
	for i := 0; i+len(seq) <= len(argv); i++ {
		if slices.Equal(argv[i:i+len(seq)], seq) {
			return i
		}
	}
	return -1
}

func TestBwrapArgv(t *testing.T) {
	merged := bwrapLayout{bwrap: "/usr/bin/bwrap", asRoot: true, sys: []sysMount{
		{path: "/usr"}, {path: "/lib", link: "usr/lib"}, {path: "/lib64", link: "usr/lib64"},
		{path: "/bin", link: "usr/bin"}, {path: "/sbin", link: "usr/sbin"},
	}}
	split := bwrapLayout{bwrap: "/opt/bwrap", sys: []sysMount{
		{path: "/usr"}, {path: "/lib"}, {path: "/bin"}, {path: "/sbin"}, // no /lib64
	}}
	spec := Spec{Shell: "/bin/bash", Command: "make test", HostRoot: "/srv/ws/users/a", WorkRel: "src/app"}

	for name, l := range map[string]bwrapLayout{"merged-usr": merged, "split": split} {
		t.Run(name, func(t *testing.T) {
			visible := bwrapArgv(l, spec)
			if !slices.Equal(visible, []string{l.bwrap, "--args", "3", "--", "/bin/bash", "-c", "make test"}) {
				t.Fatalf("visible argv = %v", visible)
			}
			argv := bwrapSetup(l, spec, []string{"A=1", "LD_PRELOAD=./x.so"})
			for _, m := range l.sys {
				want := []string{"--ro-bind", m.path, m.path}
				if m.link != "" {
					want = []string{"--symlink", m.link, m.path}
				}
				if argIndex(argv, want...) < 0 {
					t.Errorf("missing %v", want)
				}
			}
			if name == "split" && slices.Contains(argv, "/lib64") {
				t.Errorf("absent /lib64 mounted: %v", argv)
			}
			for _, seq := range [][]string{
				{"--dev", "/dev"}, {"--proc", "/proc"}, {"--tmpfs", "/tmp"},
				{"--bind-fd", "5", "/tmp/agentbe-workspace"},
				{"--seccomp", "4"}, {"--clearenv"},
				{"--setenv", "A", "1"}, {"--setenv", "LD_PRELOAD", "./x.so"},
				{"--unshare-all"}, {"--share-net"}, {"--die-with-parent"}, {"--new-session"},
				{"--cap-drop", "ALL"},
				{"--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"},
				{"--ro-bind-try", "/etc/passwd", "/etc/passwd"},
				{"--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"},
				{"--ro-bind-try", "/etc/ssl/certs", "/etc/ssl/certs"},
				{"--chdir", "/tmp/agentbe-workspace/src/app"},
			} {
				if argIndex(argv, seq...) < 0 {
					t.Errorf("missing %v in %v", seq, argv)
				}
			}
			if tmp, bind := argIndex(argv, "--tmpfs", "/tmp"), argIndex(argv, "--bind-fd"); tmp > bind {
				t.Errorf("--tmpfs /tmp (%d) after the workspace bind (%d) hides the workspace", tmp, bind)
			}
			p, ro := argIndex(argv, "--proc"), argIndex(argv, "--remount-ro", "/proc")
			switch {
			case l.asRoot && ro < p:
				t.Errorf("/proc not remounted read-only after it is mounted (root caller)")
			case !l.asRoot && ro >= 0:
				t.Errorf("/proc read-only for a non-root caller")
			}
			if ce, se := argIndex(argv, "--clearenv"), argIndex(argv, "--setenv"); ce > se {
				t.Errorf("--clearenv after --setenv")
			}
			for _, a := range argv {
				if strings.Contains(a, "/srv/ws") {
					t.Errorf("workspace bound by name: %v", argv)
				}
				if a == "/etc" || strings.Contains(a, "shadow") || a == "/" || a == "/home" || a == "/root" {
					t.Errorf("argv exposes %q", a)
				}
			}
		})
	}
}

func TestSandboxDir(t *testing.T) {
	for rel, want := range map[string]string{
		"": "/tmp/agentbe-workspace", ".": "/tmp/agentbe-workspace",
		"a": "/tmp/agentbe-workspace/a", "a/b": "/tmp/agentbe-workspace/a/b",
		"../x": "/tmp/agentbe-workspace", "/etc": "/tmp/agentbe-workspace",
	} {
		if got := sandboxDir(rel); got != want {
			t.Errorf("sandboxDir(%q) = %q, want %q", rel, got, want)
		}
	}
}

func TestBwrapEnv(t *testing.T) {
	t.Setenv("AGENTBE_TEST_DAEMON_SECRET", "hunter2")
	env := bwrapEnv(Spec{WorkRel: "sub", Env: map[string]string{"FOO": "bar", "HOME": "/root", "PATH": "/custom"}})
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	if _, ok := m["AGENTBE_TEST_DAEMON_SECRET"]; ok {
		t.Error("process environment leaked into the sandbox")
	}
	want := map[string]string{"FOO": "bar", "PATH": "/custom",
		"HOME": "/tmp/agentbe-workspace/sub", "PWD": "/tmp/agentbe-workspace/sub"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %q, want %q", k, m[k], v)
		}
	}
	if d := bwrapEnv(Spec{}); !slices.Contains(d, "PATH="+DefaultPath) || !slices.Contains(d, "TMPDIR=/tmp") {
		t.Errorf("default env lacks PATH: %v", d)
	}
}

// TestHostBwrapLayout checks the layout against this machine: directories
// are bound, links into a bound directory are recreated with the same
// target, missing paths are skipped.
func TestHostBwrapLayout(t *testing.T) {
	l := hostBwrapLayout("/usr/bin/bwrap")
	got := map[string]sysMount{}
	for _, m := range l.sys {
		got[m.path] = m
	}
	if l.asRoot != (os.Geteuid() == 0) {
		t.Errorf("asRoot = %v", l.asRoot)
	}
	if _, ok := got["/usr"]; !ok {
		t.Fatalf("/usr not mounted: %+v", l.sys)
	}
	for _, p := range systemDirs {
		fi, err := os.Lstat(p)
		m, ok := got[p]
		switch {
		case err != nil:
			if ok {
				t.Errorf("missing %s mounted", p)
			}
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			if !ok || (m.link != "" && m.link != target) {
				t.Errorf("%s -> %s: got %+v", p, target, m)
			}
		case fi.IsDir():
			if !ok || m.link != "" {
				t.Errorf("directory %s: got %+v", p, m)
			}
		}
	}
}

func TestBwrapArgvWithoutBindFD(t *testing.T) {
	l := bwrapLayout{bwrap: "/usr/bin/bwrap", sys: []sysMount{{path: "/usr"}}, noBindFD: true}
	spec := Spec{Shell: "/bin/bash", Command: "make test", WorkRel: "."}
	want := []string{"/usr/bin/bwrap", "--args", "3", "--", "/bin/bash", "-c", `exec 5<&- && exec "$0" "$@"`,
		"/bin/bash", "-c", "make test"}
	if got := bwrapArgv(l, spec); !slices.Equal(got, want) {
		t.Errorf("argv %q", got)
	}
	setup := bwrapSetup(l, spec, nil)
	if argIndex(setup, "--bind", "/proc/self/fd/5", Workspace) < 0 || slices.Contains(setup, "--bind-fd") {
		t.Errorf("setup %v", setup)
	}
}
