package agentbe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/sandbox"
	"github.com/agentbe/agent-backend/internal/testenv"
)

// newIsoLocal returns a Local with the given isolation; bwrap mode requires a
// usable bwrap (see requireBwrap). The safety check is off unless safe is
// set: these tests probe the sandbox itself, which must hold even when the
// filter in front of it lets a command through.
func newIsoLocal(t *testing.T, root string, mode Isolation, safe bool) *Local {
	t.Helper()
	if mode == IsolationBwrap {
		requireBwrap(t)
	}
	if root == "" {
		root = t.TempDir()
	}
	l, err := NewLocal(LocalConfig{RootDir: root, Isolation: mode, AllowDangerous: !safe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Destroy(context.Background()) })
	if l.Isolation() != mode {
		t.Fatalf("isolation %s, want %s", l.Isolation(), mode)
	}
	return l
}

func isoExec(t *testing.T, b Backend, command string, opts ExecOptions) string {
	t.Helper()
	out, err := b.Exec(context.Background(), command, opts)
	if err != nil {
		var xe *ExitError
		if errors.As(err, &xe) {
			t.Fatalf("Exec(%q): %v\nstdout: %s", command, err, xe.Stdout)
		}
		t.Fatalf("Exec(%q): %v", command, err)
	}
	return string(out)
}

func TestBwrapExecWorkspace(t *testing.T) {
	l := newIsoLocal(t, "", IsolationBwrap, false)
	root := l.RootDir()
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := isoExec(t, l, "echo hi > f.txt && cat f.txt && pwd && echo \"$HOME\"", ExecOptions{Dir: "sub"})
	if out != "hi\n/tmp/agentbe-workspace/sub\n/tmp/agentbe-workspace/sub\n" {
		t.Fatalf("output %q", out)
	}
	if data, err := os.ReadFile(filepath.Join(root, "sub", "f.txt")); err != nil || string(data) != "hi\n" {
		t.Fatalf("host file: %q, %v", data, err)
	}
	if out := isoExec(t, l, "cat sub/f.txt", ExecOptions{}); out != "hi\n" {
		t.Fatalf("read from root: %q", out)
	}
}

func TestBwrapExecHidesHost(t *testing.T) {
	l := newIsoLocal(t, "", IsolationBwrap, false)
	canaryDir := t.TempDir()
	canary := filepath.Join(canaryDir, "canary.txt")
	if err := os.WriteFile(canary, []byte("agentbe-canary"), 0o600); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	hidden := []string{"/root", "/home", "/etc/shadow", "/etc/gshadow", "/etc/ssl/private", canary, canaryDir,
		filepath.Join(wd, "go.mod"), l.RootDir(), "/sys", "/run", "/var"}
	var script strings.Builder
	for _, p := range hidden {
		fmt.Fprintf(&script, "if [ -e %q ]; then echo VISIBLE %q; fi\n", p, p)
	}
	script.WriteString("grep -rl agentbe-canary /tmp /etc 2>/dev/null; true\n")
	if out := isoExec(t, l, script.String(), ExecOptions{}); out != "" {
		t.Fatalf("host paths visible in the sandbox:\n%s", out)
	}
	out := isoExec(t, l, "ls -A /tmp; ls -A /", ExecOptions{})
	if !strings.HasPrefix(out, "agentbe-workspace\n") {
		t.Fatalf("/tmp holds more than the workspace: %q", out)
	}
}

func TestBwrapExecReadOnlySystem(t *testing.T) {
	l := newIsoLocal(t, "", IsolationBwrap, false)
	marker := "agentbe-rw-probe-" + strconv.Itoa(os.Getpid())
	var script strings.Builder
	for _, d := range []string{"/usr", "/usr/bin", "/bin", "/lib", "/proc/sys/kernel"} {
		fmt.Fprintf(&script, "touch %s/%s 2>/dev/null && echo WROTE %s\n", d, marker, d)
	}
	// The sandbox's own /etc is a directory on its private root; the host
	// files bound into it are read-only (appending nothing still needs write
	// access).
	for _, f := range []string{"/etc/passwd", "/etc/hosts", "/etc/resolv.conf"} {
		fmt.Fprintf(&script, "[ -e %s ] && : >> %s 2>/dev/null && echo WROTE %s\n", f, f, f)
	}
	// A root caller's sandbox must not regain write access by remounting,
	// nor write host sysctls.
	fmt.Fprintf(&script, "mount -o remount,rw,bind /usr 2>/dev/null && touch /usr/%s && echo REMOUNTED\n", marker)
	script.WriteString("cat /proc/sys/kernel/printk_ratelimit > /proc/sys/kernel/printk_ratelimit 2>/dev/null && echo SYSCTL\n")
	script.WriteString("grep '^CapEff' /proc/self/status\n")
	out := isoExec(t, l, script.String(), ExecOptions{})
	if out != "CapEff:\t0000000000000000\n" {
		t.Errorf("sandbox could write system paths or kept capabilities:\n%s", out)
	}
	for _, d := range []string{"/usr", "/usr/bin", "/etc"} {
		if _, err := os.Lstat(filepath.Join(d, marker)); err == nil {
			os.Remove(filepath.Join(d, marker))
			t.Errorf("host %s was written", d)
		}
	}
}

func TestBwrapExecNamespaces(t *testing.T) {
	l := newIsoLocal(t, "", IsolationBwrap, false)
	hostPid, _ := os.Readlink("/proc/self/ns/pid")
	hostNet, _ := os.Readlink("/proc/self/ns/net")
	out := isoExec(t, l, "readlink /proc/self/ns/pid; readlink /proc/self/ns/net; ls /proc | grep -c '^[0-9]'", ExecOptions{})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("output %q", out)
	}
	if lines[0] == hostPid {
		t.Errorf("sandbox shares the pid namespace %s", hostPid)
	}
	if lines[1] != hostNet {
		t.Errorf("sandbox net namespace %s, host %s (share-net expected)", lines[1], hostNet)
	}
	if n, _ := strconv.Atoi(lines[2]); n == 0 || n > 8 {
		t.Errorf("sandbox sees %s processes", lines[2])
	}

	// The network is shared: a loopback listener of the host is reachable.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		got <- line
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	isoExec(t, l, fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo ping-from-sandbox >&3", port), ExecOptions{})
	if line := <-got; line != "ping-from-sandbox\n" {
		t.Fatalf("listener got %q", line)
	}
}

func TestBwrapExecCleanEnv(t *testing.T) {
	t.Setenv("AGENTBE_TEST_DAEMON_SECRET", "hunter2")
	requireBwrap(t)
	l, err := NewLocal(LocalConfig{RootDir: t.TempDir(), Isolation: IsolationBwrap, AllowDangerous: true,
		Env: map[string]string{"BACKEND_VAR": "b", "CALL_VAR": "backend"}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Destroy(context.Background())
	out := isoExec(t, l, "env", ExecOptions{Env: map[string]string{"CALL_VAR": "call"}})
	if strings.Contains(out, "hunter2") {
		t.Fatal("process environment leaked into the sandbox")
	}
	for _, kv := range []string{"BACKEND_VAR=b", "CALL_VAR=call", "HOME=/tmp/agentbe-workspace", "PWD=/tmp/agentbe-workspace"} {
		if !strings.Contains(out, kv+"\n") {
			t.Errorf("env lacks %s:\n%s", kv, out)
		}
	}
}

// TestBwrapScopeIsolation: a scope's commands see only the scope root, not
// the sibling scopes or the parent workspace.
func TestBwrapScopeIsolation(t *testing.T) {
	l := newIsoLocal(t, "", IsolationBwrap, false)
	root := l.RootDir()
	for _, p := range []string{"users/a", "users/b"} {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "users/b/secret.txt"), []byte("s3cr3t-of-b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "top.txt"), []byte("s3cr3t-of-root"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := l.Scope("users/a", ScopeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := isoExec(t, a, "echo mine > a.txt; ls -A /tmp/agentbe-workspace/..; grep -rs s3cr3t / --exclude-dir=proc --exclude-dir=usr --exclude-dir=dev; "+
		"cat ../b/secret.txt ../top.txt "+filepath.Join(root, "users/b/secret.txt")+" 2>/dev/null; true", ExecOptions{})
	if out != "agentbe-workspace\n" {
		t.Fatalf("scope a sees outside its root:\n%s", out)
	}
	if data, err := os.ReadFile(filepath.Join(root, "users/a/a.txt")); err != nil || string(data) != "mine\n" {
		t.Fatalf("scope write: %q, %v", data, err)
	}
	// A nested scope is confined the same way.
	sub, err := a.Scope("deep", ScopeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out := isoExec(t, sub, "touch x; ls -A /tmp/agentbe-workspace; ls ..", ExecOptions{}); out != "x\nagentbe-workspace\n" {
		t.Fatalf("nested scope: %q", out)
	}
}

// TestBwrapExecKillsTree: cancelling the context kills every process of the
// command, including ones that left its process group (setsid) or were
// orphaned, because the pid namespace dies with bwrap.
func TestBwrapExecKillsTree(t *testing.T) {
	l := newIsoLocal(t, "", IsolationBwrap, false)
	token := testenv.SleepMarker()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := filepath.Join(l.RootDir(), "started")
	go func() {
		for i := 0; i < 1000 && ctx.Err() == nil; i++ {
			if _, err := os.Stat(started); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	cmd := fmt.Sprintf("sleep %s & setsid sleep %s & (sleep %s &) ; sleep 0.2; touch started; wait", token, token, token)
	_, err := l.Exec(ctx, cmd, ExecOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	var left []string
	for i := 0; i < 500; i++ {
		left = testenv.ProcessesWith(token)
		if len(left) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("processes survived the cancel: %v", left)
}

// TestBwrapExecSymlinks: a workspace reached through a symbolic link and
// holding links (relative, absolute host paths, a .git link, a dangling
// one) still runs commands; links into the workspace work as Dir.
func TestBwrapExecSymlinks(t *testing.T) {
	requireBwrap(t)
	base := t.TempDir()
	real := filepath.Join(base, "real")
	for _, d := range []string{"real/sub", "real/store/repo"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(real, "sub/f.txt"), []byte("via-link\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"real/rel":      "sub",
		"real/abs":      filepath.Join(real, "sub"),
		"real/dangling": "../../nowhere",
		"ws":            "real",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := exec.LookPath("git"); err == nil {
		if out, err := exec.Command("git", "init", "-q", filepath.Join(real, "store/repo")).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
		if err := os.Symlink("store/repo/.git", filepath.Join(real, ".git")); err != nil {
			t.Fatal(err)
		}
	}
	l := newIsoLocal(t, filepath.Join(base, "ws"), IsolationBwrap, false)
	out := isoExec(t, l, "ls -A; cat rel/f.txt", ExecOptions{})
	if !strings.Contains(out, "dangling\n") || !strings.HasSuffix(out, "via-link\n") {
		t.Fatalf("output %q", out)
	}
	for _, dir := range []string{"rel", "abs", "sub"} {
		if out := isoExec(t, l, "pwd; cat f.txt", ExecOptions{Dir: dir}); out != "/tmp/agentbe-workspace/sub\nvia-link\n" {
			t.Errorf("Dir %s: %q", dir, out)
		}
	}
	if _, err := os.Lstat(filepath.Join(real, ".git")); err == nil {
		out := isoExec(t, l, "git status --porcelain --untracked-files=no && echo git-ok", ExecOptions{})
		if !strings.HasSuffix(out, "git-ok\n") {
			t.Errorf("git through a .git link: %q", out)
		}
	}
}

// TestSoftwareExecChecks: software mode runs on the host (same pid
// namespace) with the safety check; none runs unchecked only when
// AllowDangerous is also set.
func TestSoftwareExecChecks(t *testing.T) {
	hostPid, _ := os.Readlink("/proc/self/ns/pid")
	sw := newIsoLocal(t, "", IsolationSoftware, true)
	nsEnv := ExecOptions{Env: map[string]string{"NS": "/proc/self/ns/pid"}} // the path heuristic refuses it written out
	if out := isoExec(t, sw, `readlink "$NS"`, nsEnv); strings.TrimSpace(out) != hostPid {
		t.Errorf("software mode ran in pid namespace %q", out)
	}
	for _, mode := range []Isolation{IsolationSoftware, IsolationNone} {
		l := newIsoLocal(t, "", mode, true)
		if _, err := l.Exec(context.Background(), "sudo id", ExecOptions{}); CodeOf(err) != CodeDangerousOperation {
			t.Errorf("%s: sudo not blocked: %v", mode, err)
		}
		if _, err := l.Exec(context.Background(), "cd .. && ls", ExecOptions{}); CodeOf(err) != CodeUnsafeCommand {
			t.Errorf("%s: cd not blocked: %v", mode, err)
		}
	}
	none := newIsoLocal(t, "", IsolationNone, false)
	if out := isoExec(t, none, "echo $HOME | grep -c /", ExecOptions{}); out != "1\n" {
		t.Errorf("none with AllowDangerous: %q", out)
	}
	if bw, err := sandbox.NewBwrap(); err == nil {
		l := newIsoLocal(t, "", IsolationBwrap, true)
		if _, err := l.Exec(context.Background(), "curl x | sh", ExecOptions{}); CodeOf(err) != CodeDangerousOperation {
			t.Errorf("bwrap (%s): pipe to shell not blocked: %v", bw.Launcher(), err)
		}
	}
}

func TestAutoIsolation(t *testing.T) {
	l, err := NewLocal(LocalConfig{RootDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Destroy(context.Background())
	_, probeErr := sandbox.NewBwrap()
	want := IsolationBwrap
	if probeErr != nil {
		want = IsolationSoftware
	}
	if l.Isolation() != want {
		t.Fatalf("auto chose %s, want %s (probe: %v)", l.Isolation(), want, probeErr)
	}
}

// TestBwrapExecConcurrent runs sandboxed commands in parallel from a shared
// backend and its scopes (the /etc stage and the probe are shared state).
func TestBwrapExecConcurrent(t *testing.T) {
	l := newIsoLocal(t, "", IsolationBwrap, true)
	errs := make(chan error, 16)
	for i := 0; i < 8; i++ {
		go func(i int) {
			var b Backend = l
			if i%2 == 1 {
				s, err := l.Scope(fmt.Sprintf("t%d", i), ScopeOptions{})
				if err != nil {
					errs <- err
					return
				}
				b = s
			}
			out, err := b.Exec(context.Background(), fmt.Sprintf("echo %d > f%d && cat f%d", i, i, i), ExecOptions{})
			if err == nil && string(out) != fmt.Sprintf("%d\n", i) {
				err = fmt.Errorf("command %d printed %q", i, out)
			}
			errs <- err
		}(i)
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestSoftwareExecRefusesOutsidePaths: through Exec, with the real host
// path of a canary outside the workspace; the workspace's own absolute
// paths work. AllowDangerous turns the heuristic off, as it does the
// command check; none mode never applies it.
func TestSoftwareExecRefusesOutsidePaths(t *testing.T) {
	ctx := context.Background()
	canary := t.TempDir()
	secret := filepath.Join(canary, "secret")
	mustOK(t, os.WriteFile(secret, []byte("s3cret"), 0o600))
	l := newIsoLocal(t, "", IsolationSoftware, true)
	for _, cmd := range []string{"cat " + secret, "cp " + secret + " .", "cat /etc/passwd"} {
		out, err := l.Exec(ctx, cmd, ExecOptions{})
		if CodeOf(err) != CodeDangerousOperation || strings.Contains(string(out), "s3cret") {
			t.Errorf("%q: %q, %v", cmd, out, err)
		}
	}
	if _, err := os.Stat(filepath.Join(l.RootDir(), "secret")); err == nil {
		t.Error("secret copied into the workspace")
	}
	mustOK(t, l.Write(ctx, "in.txt", []byte("mine")))
	host := l.jailHost(t)
	if out := isoExec(t, l, "cat "+filepath.Join(host, "in.txt"), ExecOptions{}); out != "mine" {
		t.Errorf("workspace path refused: %q", out)
	}
	scope, err := l.Scope("users/alice", ScopeOptions{})
	mustOK(t, err)
	mustOK(t, l.Write(ctx, "users/bob/b.txt", []byte("bob")))
	if _, err := scope.Exec(ctx, "cat "+filepath.Join(host, "users/bob/b.txt"), ExecOptions{}); CodeOf(err) != CodeDangerousOperation {
		t.Errorf("scope read a sibling by absolute path: %v", err)
	}
	none := newIsoLocal(t, "", IsolationNone, true)
	if out := isoExec(t, none, "cat "+secret, ExecOptions{}); out != "s3cret" {
		t.Errorf("none mode: %q", out)
	}
}

// TestBwrapExecEtc: the staged /etc serves what programs need.
func TestBwrapExecEtc(t *testing.T) {
	l := newIsoLocal(t, "", IsolationBwrap, false)
	script := "id -un; awk 'BEGIN{print \"awk-ok\"}'; test -r /etc/passwd && echo passwd-ok; " +
		"getent hosts localhost >/dev/null && echo hosts-ok; test -e /etc/shadow || echo no-shadow"
	want := "awk-ok\npasswd-ok\nhosts-ok\nno-shadow\n"
	out := isoExec(t, l, script, ExecOptions{})
	user, rest, _ := strings.Cut(out, "\n")
	if user == "" || rest != want {
		t.Fatalf("output %q, want a user name then %q", out, want)
	}
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		if out := isoExec(t, l, "test -s /etc/ssl/certs/ca-certificates.crt && echo ok", ExecOptions{}); out != "ok\n" {
			t.Errorf("CA bundle not visible: %q", out)
		}
	}
}
