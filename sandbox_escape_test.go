//go:build linux

package agentbe

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/internal/procs"
	"github.com/agentbe/agent-backend/internal/sandbox"
)

// The attacks of the sandbox-escape issue, each aimed at a canary directory
// the test creates outside the workspace. Every one of them ran code or
// wrote files outside the workspace before the fixes.

// preloadSource writes a marker outside (at CANARY) and one in the working
// directory, naming the executable it was loaded into.
const preloadSource = `
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
static void mark(const char *path) {
	char exe[512] = {0};
	readlink("/proc/self/exe", exe, sizeof exe - 1);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd >= 0) { write(fd, exe, strlen(exe)); write(fd, "\n", 1); close(fd); }
}
__attribute__((constructor)) static void init(void) {
	mark(CANARY "/ran-outside");
	mark("ran-inside");
}
unsigned int la_version(unsigned int v) { return v; }
`

// buildPreload compiles preloadSource into dir/x.so with the canary path
// baked in; it stands for an object written by an earlier sandboxed command.
func buildPreload(t *testing.T, dir, canary string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("a C compiler is required (CI installs gcc): %v", err)
	}
	src := filepath.Join(t.TempDir(), "x.c")
	mustOK(t, os.WriteFile(src, []byte(preloadSource), 0o644))
	so := filepath.Join(dir, "x.so")
	out, err := exec.Command(cc, "-shared", "-fPIC", `-DCANARY="`+canary+`"`, "-o", so, src).CombinedOutput()
	if err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	return so
}

// TestBwrapLoaderEnvNeverReachesLauncher: LD_PRELOAD and friends apply
// inside the sandbox only; bwrap itself runs with a fixed environment from
// "/", so the object never runs on the host.
func TestBwrapLoaderEnvNeverReachesLauncher(t *testing.T) {
	ws, canary := t.TempDir(), t.TempDir()
	l := newIsoLocal(t, ws, IsolationBwrap, false)
	so := buildPreload(t, ws, canary)
	for _, env := range []map[string]string{
		{"LD_PRELOAD": "./x.so"},
		{"LD_PRELOAD": so},
		{"LD_AUDIT": "./x.so"},
		{"LD_LIBRARY_PATH": ".", "GCONV_PATH": ".", "LD_PRELOAD": "x.so"},
	} {
		out, err := l.Exec(context.Background(), "echo ok", ExecOptions{Env: env})
		if err != nil || string(out) != "ok\n" {
			t.Errorf("env %v: %q, %v", env, out, err)
		}
		if b, err := os.ReadFile(filepath.Join(canary, "ran-outside")); err == nil {
			t.Fatalf("env %v: preloaded object ran outside the sandbox, in %s", env, b)
		}
	}
	inside, err := os.ReadFile(filepath.Join(ws, "ran-inside"))
	if err != nil || !strings.Contains(string(inside), "bash") || strings.Contains(string(inside), "bwrap") {
		t.Fatalf("LD_PRELOAD must reach the sandboxed command only; inside markers: %q, %v", inside, err)
	}
}

// TestBwrapBindsValidatedDirectory: a tenant who controls the parent entry
// swaps a scope's directory for a link between two commands of the scope;
// the second command still runs in the directory that was validated. The
// same holds in the unsandboxed modes, which enter it by descriptor.
func TestBwrapBindsValidatedDirectory(t *testing.T) {
	for _, mode := range []Isolation{IsolationBwrap, IsolationNone, IsolationSoftware} {
		t.Run(string(mode), func(t *testing.T) {
			ws, canary := t.TempDir(), t.TempDir()
			l := newIsoLocal(t, ws, mode, false)
			inner, err := l.Scope("users/alice", ScopeOptions{})
			mustOK(t, err)
			isoExec(t, inner, "echo first > f", ExecOptions{})
			swapScopeForLink(t, ws, canary, inner)
			if _, err := l.Scope("users/alice", ScopeOptions{}); err != nil {
				t.Fatal(err) // creating the scope is lazy; using it must fail
			}
			fresh, _ := l.Scope("users/alice", ScopeOptions{})
			if _, err := fresh.Exec(context.Background(), "touch pwned2", ExecOptions{}); !errors.Is(err, ErrScopeLink) {
				t.Fatalf("a new scope through the link: %v", err)
			}
			if _, err := os.Stat(filepath.Join(canary, "pwned2")); err == nil {
				t.Fatal("new scope through a link reached its target")
			}
		})
	}
}

// TestBwrapNoSetIDFiles: nothing a sandboxed command does leaves a
// set-user-ID or set-group-ID file or directory in the workspace: shell
// tools, and raw system calls of every kind the filter must close.
func TestBwrapNoSetIDFiles(t *testing.T) {
	ws := t.TempDir()
	l := newIsoLocal(t, ws, IsolationBwrap, false)
	probe := filepath.Join(ws, "probe")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	build := exec.Command(goTool, "build", "-o", probe, "./testdata/setidprobe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build probe: %v\n%s", err, out)
	}
	tools := `cp /bin/true a; chmod 4755 a; chmod u+s a; cp /bin/true b; chmod 2755 b; chmod g+s b
mkdir -m 2755 d1; mkdir d2; chmod 2775 d2; chmod +t d2; install -m 4755 /bin/true c
python3 -c 'import os; os.chmod("a", 0o4755)' 2>/dev/null
perl -e 'chmod 04755, "a"; sysopen(my $f, "p", 0101, 04755)' 2>/dev/null
echo done`
	if out := isoExec(t, l, tools, ExecOptions{}); !strings.HasSuffix(out, "done\n") {
		t.Fatalf("tools: %q", out)
	}
	out := isoExec(t, l, "./probe", ExecOptions{})
	results := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, errno, _ := strings.Cut(line, " ")
		results[name] = errno
	}
	for _, ok := range []string{"plain-chmod", "plain-creat"} {
		if results[ok] != "0" {
			t.Errorf("%s failed (errno %s): the filter is too broad\n%s", ok, results[ok], out)
		}
	}
	for _, enosys := range []string{"openat2", "io_uring_setup"} {
		if results[enosys] != "38" {
			t.Errorf("%s: errno %s, want ENOSYS", enosys, results[enosys])
		}
	}
	err := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			t.Errorf("%s is %v on the host", strings.TrimPrefix(p, ws), fi.Mode())
		}
		return nil
	})
	mustOK(t, err)
	if fi, err := os.Stat(filepath.Join(ws, "d2")); err != nil || fi.Mode()&fs.ModeSticky == 0 {
		t.Errorf("sticky bit (harmless) should still be settable: %v", err)
	}
}

// TestBwrapHidesHostLayout: pid 1 of the sandbox (bwrap's reaper) and the
// command's own argv and environment show neither the host workspace path
// nor the /etc staging directory, and no descriptor beyond stdio reaches the
// command (an inherited directory would let it climb out).
func TestBwrapHidesHostLayout(t *testing.T) {
	procs.CloseInheritedOnExec() // what the daemon's main does: none of the test runner's descriptors
	ws := t.TempDir()
	l := newIsoLocal(t, ws, IsolationBwrap, false)
	host := l.jailHost(t)
	out := isoExec(t, l, `cat /proc/1/cmdline /proc/1/environ /proc/self/cmdline /proc/self/environ | tr '\0' ' '
echo; grep Seccomp: /proc/self/status; ls /proc/$$/fd; :`, ExecOptions{}) // ls a child, listing the shell's
	for _, leak := range []string{host, ws, "agentbe-etc-" /* the /etc stage */, filepath.Dir(ws)} {
		if strings.Contains(out, leak) {
			t.Errorf("sandbox sees %q:\n%s", leak, out)
		}
	}
	if !strings.Contains(out, "Seccomp:\t2") {
		t.Errorf("no seccomp filter in force:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if fds := strings.Join(lines[len(lines)-3:], " "); fds != "0 1 2" {
		t.Errorf("descriptors of the sandboxed shell: %q, want 0 1 2", fds)
	}
}

// TestScopeRootThroughLinkRefused: a scope root is reached without
// following links, whichever component is the link, and nothing is created
// where a link points.
func TestScopeRootThroughLinkRefused(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	l := newIsoLocal(t, ws, IsolationNone, false)
	mustOK(t, l.Write(ctx, "users/bob/secret.txt", []byte("bob's")))
	mustOK(t, l.Mkdir(ctx, "users/alice"))
	mustOK(t, os.Symlink("../bob", filepath.Join(ws, "users/alice/proj")))
	mustOK(t, os.Symlink("users/bob", filepath.Join(ws, "bobs")))
	for _, p := range []string{"users/alice/proj", "users/alice/proj/new", "bobs", "bobs/sub"} {
		s, err := l.Scope(p, ScopeOptions{})
		mustOK(t, err)
		if _, err := s.Read(ctx, "secret.txt"); !errors.Is(err, ErrScopeLink) || !errors.Is(err, ErrPathEscape) {
			t.Errorf("%s: read through the link: %v", p, err)
		}
		if err := s.Write(ctx, "secret.txt", []byte("alice's")); !errors.Is(err, ErrScopeLink) {
			t.Errorf("%s: write through the link: %v", p, err)
		}
		if err != nil && strings.Contains(err.Error(), ws) {
			t.Errorf("%s: error reveals the host path: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "users/bob/secret.txt")); string(b) != "bob's" {
		t.Fatalf("bob's file is now %q", b)
	}
	for _, p := range []string{"users/bob/new", "users/bob/sub"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s created through a link", p)
		}
	}
	// A link inside a scope is still followed within the scope's jail.
	s, err := l.Scope("users/alice", ScopeOptions{})
	mustOK(t, err)
	mustOK(t, s.Write(ctx, "real/x.txt", []byte("x")))
	mustOK(t, os.Symlink("real", filepath.Join(ws, "users/alice/alias")))
	if b, err := s.Read(ctx, "alias/x.txt"); err != nil || string(b) != "x" {
		t.Errorf("link inside the scope: %q, %v", b, err)
	}
}

// TestBwrapEnvThroughArgsDescriptor: the command's environment travels in
// the --args descriptor, whatever its size (past a pipe buffer it is fed by
// a goroutine) and whatever its names and values look like to bwrap's
// option parser; names no environment can hold are refused.
func TestBwrapEnvThroughArgsDescriptor(t *testing.T) {
	l := newIsoLocal(t, "", IsolationBwrap, false)
	big := strings.Repeat("x", 100000)
	env := map[string]string{"BIG": big, "OPT": "--bind / /tmp/agentbe-workspace", "--chdir": "/"}
	for i := 0; i < 200; i++ {
		env["V"+strings.Repeat("y", i)] = strings.Repeat("z", 200)
	}
	out := isoExec(t, l, `echo ${#BIG}; echo "$OPT"; pwd; env | grep -c '^Vy*='`, ExecOptions{Env: env})
	if out != "100000\n--bind / /tmp/agentbe-workspace\n/tmp/agentbe-workspace\n200\n" {
		t.Fatalf("output %q", out)
	}
	for _, bad := range []map[string]string{{"A=B": "1"}, {"": "1"}, {"NUL": "a\x00b"}} {
		if _, err := l.Exec(context.Background(), "true", ExecOptions{Env: bad}); CodeOf(err) != CodeExecError {
			t.Errorf("env %q: %v", bad, err)
		}
	}
}

// TestBwrapWithoutBindFD: the layout for a bwrap older than 0.8.0 (no
// --bind-fd) binds the same open directory through /proc/self/fd and closes
// that descriptor before the command runs; the swap and descriptor attacks
// fail there too. Forced here on a newer bwrap, which accepts both.
func TestBwrapWithoutBindFD(t *testing.T) {
	procs.CloseInheritedOnExec()
	ws, canary := t.TempDir(), t.TempDir()
	l := newIsoLocal(t, ws, IsolationBwrap, false)
	l.sb = sandbox.WithoutBindFD(l.sb)
	inner, err := l.Scope("users/alice", ScopeOptions{})
	mustOK(t, err)
	out := isoExec(t, inner, `echo "$0 $*|$1"; ls /proc/$$/fd; :`, ExecOptions{})
	if !strings.HasSuffix(out, " |\n0\n1\n2\n") || !strings.HasPrefix(out, "/bin/") {
		t.Fatalf("output %q: want the command's own argv and descriptors 0 1 2", out)
	}
	if got := isoExec(t, inner, `printf '%s|' "$0" "$@"`, ExecOptions{}); !strings.HasPrefix(got, "/bin/") {
		t.Errorf("$0 of the command: %q", got)
	}
	swapScopeForLink(t, ws, canary, inner)
}

// swapScopeForLink replaces the scope directory users/alice by a link to
// canary, runs a command of inner (that scope), and checks it ran in the
// directory that was validated, not through the link.
func swapScopeForLink(t *testing.T, ws, canary string, inner Backend) {
	t.Helper()
	mustOK(t, os.Rename(filepath.Join(ws, "users/alice"), filepath.Join(ws, "users/alice.old")))
	mustOK(t, os.Symlink(canary, filepath.Join(ws, "users/alice")))
	isoExec(t, inner, "echo pwned > pwned", ExecOptions{})
	if _, err := os.Stat(filepath.Join(canary, "pwned")); err == nil {
		t.Fatal("command of the swapped scope wrote into the link's target")
	}
	if _, err := os.Stat(filepath.Join(ws, "users/alice.old/pwned")); err != nil {
		t.Fatalf("command did not run in the validated directory: %v", err)
	}
}
