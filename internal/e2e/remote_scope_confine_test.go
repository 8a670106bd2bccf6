package e2e_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/testenv"
)

// bobSecret is the canary of the sibling scope users/bob.
const bobSecret = "bob-s3cret-canary-7f1c"

// confinedDaemon runs our daemon binary under bwrap with two sibling
// scopes, users/alice (one file) and users/bob (the canary), and returns
// a Remote on it (operator token, RootDir the daemon's root).
func confinedDaemon(t *testing.T) (root string, r *agentbe.Remote) {
	t.Helper()
	_, err := exec.LookPath("bwrap")
	testenv.Require(t, err == nil, "bwrap")
	dir := t.TempDir()
	root = filepath.Join(dir, "ws")
	port := testenv.FreePort(t)
	for _, p := range []string{"users/alice", "users/bob"} {
		must(t, os.MkdirAll(filepath.Join(root, p), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(root, "users/alice/mine.txt"), []byte("alice's"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "users/bob/secret.txt"), []byte(bobSecret), 0o644))
	token := "confine-token-of-the-scope-tests-0123"
	tokenFile := filepath.Join(dir, "token")
	must(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	keyPath := filepath.Join(dir, "hostkey")
	hostKey := writeHostKey(t, keyPath)
	cmd := exec.Command(buildCLI(t), "daemon", "--rootDir", root, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--auth-token-file", tokenFile, "--isolation", "bwrap", "--ssh-host-key", keyPath)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if t.Failed() {
			t.Logf("daemon stderr:\n%s", stderr.String())
		}
	})
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/health"
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon binary did not answer /health")
		}
	}
	r, err = agentbe.NewRemote(agentbe.RemoteConfig{RootDir: root, Host: "127.0.0.1", Port: port, Token: token,
		HostKeyCallback: pinKey(t, hostKey), KeepaliveInterval: -1})
	must(t, err)
	t.Cleanup(func() { r.Destroy(context.Background()) })
	return root, r
}

// TestRemoteScopeExecConfined: a command of a Remote scope sees only its
// scope, by the sandbox's workspace path and by the host path alike: it
// cannot read the sibling's canary, lists only its own files at the
// workspace path, and cannot write into the sibling. A working directory
// inside the scope stays a working directory ("..", back to the scope
// root, works).
func TestRemoteScopeExecConfined(t *testing.T) {
	ctx := context.Background()
	root, r := confinedDaemon(t)
	alice, err := r.Scope("users/alice", agentbe.ScopeOptions{})
	must(t, err)
	for _, cmd := range []string{
		"cat /tmp/agentbe-workspace/users/bob/secret.txt",
		"cat " + filepath.Join(root, "users/bob/secret.txt"),
		"cat ../bob/secret.txt",
		"grep -rs " + bobSecret[:8] + " /tmp",
	} {
		out, err := alice.Exec(ctx, cmd, agentbe.ExecOptions{})
		if strings.Contains(string(out), bobSecret) || strings.Contains(errText(err), bobSecret) {
			t.Errorf("%s: alice read bob's secret", cmd)
		}
	}
	out, err := alice.Exec(ctx, "ls -A /tmp/agentbe-workspace", agentbe.ExecOptions{})
	if err != nil || string(out) != "mine.txt\n" {
		t.Errorf("ls of the workspace path from alice's scope: %q, %v", out, err)
	}
	for _, cmd := range []string{
		"echo x > /tmp/agentbe-workspace/users/bob/owned.txt",
		"echo x > " + filepath.Join(root, "users/bob/owned.txt"),
		"echo x > ../bob/owned.txt",
	} {
		alice.Exec(ctx, cmd, agentbe.ExecOptions{})
	}
	if names, _ := os.ReadDir(filepath.Join(root, "users/bob")); len(names) != 1 {
		t.Errorf("alice wrote into bob's scope: %v", names)
	}
	must(t, alice.Mkdir(ctx, "sub"))
	out, err = alice.Exec(ctx, "cat ../mine.txt && pwd", agentbe.ExecOptions{Dir: "sub"})
	if err != nil || string(out) != "alice's/tmp/agentbe-workspace/sub\n" {
		t.Errorf("working directory inside the scope: %q, %v", out, err)
	}
	// The root Remote still sees the whole workspace.
	out, err = r.Exec(ctx, "ls /tmp/agentbe-workspace/users", agentbe.ExecOptions{})
	if err != nil || string(out) != "alice\nbob\n" {
		t.Errorf("root Remote: %q, %v", out, err)
	}
}

// TestRemoteScopeSFTPJailed: a Remote scope's files go through an SFTP
// session the daemon jails at the scope, so a link alice makes inside her
// scope towards bob's (relative, by the workspace path or by the host
// path) does not lead there, for reads, listings and writes.
func TestRemoteScopeSFTPJailed(t *testing.T) {
	ctx := context.Background()
	root, r := confinedDaemon(t)
	alice, err := r.Scope("users/alice", agentbe.ScopeOptions{})
	must(t, err)
	// Links alice can make in her own scope (her commands can: the
	// client's check refuses "ln -s ../" but not every spelling of it).
	must(t, os.Symlink("../bob", filepath.Join(root, "users/alice/up")))
	must(t, os.Symlink(filepath.Join(root, "users/bob"), filepath.Join(root, "users/alice/host")))
	must(t, os.Symlink("../bob/secret.txt", filepath.Join(root, "users/alice/file-link")))
	for _, p := range []string{"up/secret.txt", "host/secret.txt", "file-link"} {
		if data, err := alice.Read(ctx, p); err == nil || strings.Contains(string(data), bobSecret) {
			t.Errorf("Read(%s): %q, %v", p, data, err)
		}
		if names, err := alice.ReadDir(ctx, filepath.Dir(p)); err == nil && strings.Contains(strings.Join(names, ","), "secret.txt") {
			t.Errorf("ReadDir(%s): %v", filepath.Dir(p), names)
		}
		alice.Write(ctx, p+".owned", []byte("x"))
	}
	if names, _ := os.ReadDir(filepath.Join(root, "users/bob")); len(names) != 1 {
		t.Errorf("alice wrote into bob's scope: %v", names)
	}
	// Her own files work as before, with the same paths.
	must(t, alice.Write(ctx, "notes/a.txt", []byte("mine")))
	if data, err := alice.Read(ctx, filepath.Join(root, "users/alice/notes/a.txt")); err != nil || string(data) != "mine" {
		t.Errorf("Read by the absolute path: %q, %v", data, err)
	}
	if real, err := alice.RealPath(ctx, "notes/a.txt"); err != nil || real != filepath.Join(root, "users/alice/notes/a.txt") {
		t.Errorf("RealPath: %q, %v", real, err)
	}
	if data, err := os.ReadFile(filepath.Join(root, "users/alice/notes/a.txt")); err != nil || string(data) != "mine" {
		t.Errorf("on the host: %q, %v", data, err)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
