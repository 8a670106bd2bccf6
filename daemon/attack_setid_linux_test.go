//go:build linux

package daemon

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	"golang.org/x/sys/unix"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// setIDAttack is a script a hostile tenant writes into its scope and runs,
// so that the dangerous-command check (a heuristic) never sees its lines:
// every shell way to leave a set-user-ID or set-group-ID file, or one with
// file capabilities (as good as set-user-ID root), then the planted set-id
// binary, then a marker.
const setIDAttack = `cp /bin/true a; chmod 4755 a; chmod u+s a; cp /bin/true b; chmod 2755 b; chmod g+s b
grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; grep -E ' /tmp/agentbe-workspace ' /proc/self/mountinfo
mkdir -m 2755 d1; mkdir d2; chmod 2775 d2; install -m 4755 /bin/true c; cp -p suid-id copy-id
python3 -c 'import os; os.chmod("a", 0o4755)' 2>/dev/null
cp /bin/true capped; setcap cap_setuid+ep capped
python3 -c 'import os; os.setxattr("capped", "security.capability", bytes.fromhex("0100000280000000000000000000000000000000"))'
./suid-id; ./copy-id
echo attack-done
`

// plantSetID puts into dir a copy of id(1) that is set-user-ID and
// set-group-ID to a user and group nobody in the test is (as if the file
// had reached the scope by a route outside the tenant's control): run
// with those bits honoured, it prints "euid=4242" and "egid=4243".
func plantSetID(t *testing.T, dir string) {
	t.Helper()
	testenv.Require(t, os.Geteuid() == 0, "root (to plant a set-id file of another user)")
	idBin, err := exec.LookPath("id")
	if err != nil {
		t.Skip("no id(1)")
	}
	b, err := os.ReadFile(idBin)
	must(t, err)
	p := filepath.Join(dir, "suid-id")
	must(t, os.WriteFile(p, b, 0o755))
	must(t, os.Chown(p, 4242, 4243))
	must(t, os.Chmod(p, 0o755|fs.ModeSetuid|fs.ModeSetgid))
	if fi, err := os.Stat(p); err != nil || fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != fs.ModeSetuid|fs.ModeSetgid {
		t.Fatalf("planting: %v %v", fi.Mode(), err)
	}
}

// noSetIDLeft fails for every set-id file or directory below dir except
// the planted one, and for every file with capabilities.
func noSetIDLeft(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 && filepath.Base(p) != "suid-id" {
			t.Errorf("%s is %v on the host", strings.TrimPrefix(p, dir), fi.Mode())
		}
		if fi.Mode().IsRegular() {
			if _, err := unix.Lgetxattr(p, "security.capability", make([]byte, 64)); !errors.Is(err, unix.ENODATA) {
				t.Errorf("%s has file capabilities on the host (%v)", strings.TrimPrefix(p, dir), err)
			}
		}
		return nil
	})
	must(t, err)
}

// noSetIDEffect fails when the output of id(1) shows an effective user or
// group other than the real one, or when the attack script's report of
// its own confinement lacks what exec guarantees: no_new_privs, a seccomp
// filter, and a nosuid workspace mount.
func noSetIDEffect(t *testing.T, route, out string) {
	t.Helper()
	ws := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " /tmp/agentbe-workspace ") {
			ws = l
		}
	}
	if !strings.Contains(out, "NoNewPrivs:\t1") || !strings.Contains(out, "Seccomp:\t2") || !strings.Contains(ws, "nosuid") {
		t.Errorf("%s: not confined as exec is: %q", route, out)
	}
	if !strings.Contains(out, "uid=") {
		t.Errorf("%s: the set-id binary did not run: %q", route, out)
	}
	// Only id(1)'s lines: the workspace's host path, in the mount line,
	// is a temporary name whose digits may hold 4242.
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, "uid="); i >= 0 && (strings.Contains(l[i:], "euid=") || strings.Contains(l[i:], "egid=") ||
			strings.Contains(l[i:], "4242") || strings.Contains(l[i:], "4243")) {
			t.Errorf("%s: the set-id bits took effect: %q", route, out)
		}
	}
}

// TestTenantProcessSetID: a hostile tenant tries to make set-user-ID and
// set-group-ID files in its scope, and to run one, through each process
// route (POST /v1/processes/run, POST /v1/processes, the terminal
// WebSocket): the routes give the same guarantees as exec (the seccomp
// filter refuses the modes; the sandbox's nosuid mounts and no_new_privs
// keep a set-id binary from changing identity), and no set-id file is
// left on the host.
func TestTenantProcessSetID(t *testing.T) {
	d := startTenantDaemon(t, Config{DisableSSHWS: true}, `{}`)
	scope := filepath.Join(d.RootDir(), "users", "alice")
	must(t, os.MkdirAll(scope, 0o755))
	plantSetID(t, scope)
	build := exec.Command("go", "build", "-o", filepath.Join(scope, "probe"), "../testdata/setidprobe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build probe: %v\n%s", err, out)
	}
	st, _, body := d.call(t, "PUT", "/v1/fs/file?path=attack.sh", aliceTok, "", strings.NewReader(setIDAttack))
	if st != 200 {
		t.Fatalf("upload: %d %s", st, body)
	}

	// POST /v1/processes/run: chmod on a file written through /v1/fs, the
	// attack script, and the raw system calls of the probe.
	st, _, body = d.call(t, "PUT", "/v1/fs/file?path=x.sh", aliceTok, "", strings.NewReader("#!/bin/sh\nid\n"))
	if st != 200 {
		t.Fatalf("upload: %d %s", st, body)
	}
	for _, mode := range []string{"4755", "2755", "u+s", "g+s"} {
		st, _, body = d.call(t, "POST", "/v1/processes/run", aliceTok, "", strings.NewReader(`{"command":"chmod","args":["`+mode+`","x.sh"]}`))
		if st != 200 || strings.Contains(body, `"exitCode":0`) {
			t.Errorf("run chmod %s: %d %s", mode, st, body)
		}
	}
	run := func(args string) string {
		t.Helper()
		st, _, body := d.call(t, "POST", "/v1/processes/run", aliceTok, "", strings.NewReader(`{"command":"sh","args":[`+args+`],"timeoutMs":60000}`))
		var r struct{ Stdout, Stderr string }
		if st != 200 || json.Unmarshal([]byte(body), &r) != nil {
			t.Fatalf("run %s: %d %s", args, st, body)
		}
		return r.Stdout + r.Stderr
	}
	out := run(`"attack.sh"`)
	if !strings.Contains(out, "attack-done") {
		t.Fatalf("run attack.sh: %q", out)
	}
	noSetIDEffect(t, "run", out)
	probe := run(`"-c","./probe"`)
	for _, line := range strings.Split(strings.TrimSpace(probe), "\n") {
		name, errno, _ := strings.Cut(line, " ")
		plain := strings.HasPrefix(name, "plain-")
		if plain && errno != "0" || !plain && errno == "0" {
			t.Errorf("probe through run: %s errno %s", name, errno)
		}
	}
	noSetIDLeft(t, scope)

	// POST /v1/processes: the same script as a background process.
	id := d.procStart(t, aliceTok, `{"command":"sh","args":["attack.sh"]}`)
	d.procWait(t, aliceTok, id)
	out = d.procLogs(t, aliceTok, id)
	if !strings.Contains(out, "attack-done") {
		t.Fatalf("process attack.sh: %q", out)
	}
	noSetIDEffect(t, "process", out)
	noSetIDLeft(t, scope)

	// The terminal WebSocket: typed into an interactive shell on a pty.
	id = d.procStart(t, aliceTok, `{"command":"sh","args":["-i"],"tty":true,"interactive":true}`)
	defer d.call(t, "POST", "/v1/processes/"+id+"/kill", aliceTok, "", nil)
	cfg, err := websocket.NewConfig("ws"+strings.TrimPrefix(d.url, "http")+"/v1/processes/"+id+"/terminal/ws", d.url)
	must(t, err)
	cfg.Header.Set("Authorization", "Bearer "+aliceTok)
	ws, err := websocket.DialConfig(cfg)
	must(t, err)
	defer ws.Close()
	must(t, websocket.Message.Send(ws, `{"type":"input","data":"sh attack.sh; chmod 4755 x.sh; ./x.sh; echo term-$((6*7))\n"}`))
	var screen strings.Builder
	ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	for !strings.Contains(screen.String(), "term-42") {
		var msg []byte
		if err := websocket.Message.Receive(ws, &msg); err != nil {
			if err == io.EOF {
				break
			}
			t.Fatalf("terminal: %v; screen %q", err, screen.String())
		}
		screen.Write(msg)
	}
	noSetIDEffect(t, "terminal", screen.String())
	noSetIDLeft(t, scope)
	if fi, err := os.Stat(filepath.Join(scope, "x.sh")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("x.sh after the attempts: %v %v", fi.Mode(), err)
	}
}
