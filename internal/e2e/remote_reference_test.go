package e2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/testenv"
)

// startReferenceDaemon runs the TypeScript reference daemon
// (agent-backend@0.13.2 from interop/node_modules) in software isolation on
// a free loopback port and returns its port and its SSH host key.
func startReferenceDaemon(t *testing.T, root, token string) (int, ssh.PublicKey) {
	t.Helper()
	node, err := exec.LookPath("node")
	testenv.Require(t, err == nil, "node")
	wd, _ := os.Getwd()
	cli := filepath.Join(wd, "../../interop/node_modules/agent-backend/dist/cli.js")
	_, err = os.Stat(cli)
	testenv.Require(t, err == nil, "agent-backend@0.13.2 (npm ci --prefix interop)")
	port := testenv.FreePort(t)
	keyFile := filepath.Join(t.TempDir(), "key")
	hostKey := writeHostKey(t, keyFile)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, cli, "daemon", "--rootDir", root, "--port", strconv.Itoa(port),
		"--isolation", "software", "--auth-token", token, "--ssh-host-key", keyFile)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return port, hostKey
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("reference daemon did not start:\n%s", out.String())
	return 0, nil
}

// TestRemoteAgainstReferenceDaemon runs the Remote's operations against the
// TypeScript reference daemon: it must work with any daemon speaking the
// protocol, not only ours.
func TestRemoteAgainstReferenceDaemon(t *testing.T) {
	ctx := context.Background()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	port, hostKey := startReferenceDaemon(t, root, "ref-token")
	r, err := agentbe.NewRemote(agentbe.RemoteConfig{RootDir: root, Host: "127.0.0.1", Port: port,
		Token: "ref-token", HostKeyCallback: pinKey(t, hostKey), OperationTimeout: 20 * time.Second,
		KeepaliveInterval: -1})
	must(t, err)
	defer r.Destroy(ctx)

	must(t, r.Write(ctx, "dir/a.txt", []byte("one")))
	must(t, r.Write(ctx, "dir/a.txt", []byte("two"))) // atomic replace of an existing file
	if b, err := r.Read(ctx, "dir/a.txt"); err != nil || string(b) != "two" {
		t.Fatalf("Read %q %v", b, err)
	}
	bin := make([]byte, 300000)
	rand.Read(bin)
	must(t, r.Write(ctx, "bin", bin))
	if b, err := r.Read(ctx, "bin"); err != nil || !bytes.Equal(b, bin) {
		t.Errorf("binary round trip: %v", err)
	}
	if names, err := r.ReadDir(ctx, "dir"); err != nil || strings.Join(names, ",") != "a.txt" {
		t.Errorf("ReadDir %v %v", names, err)
	}
	must(t, r.Mkdir(ctx, "m/n"))
	if ok, err := r.Exists(ctx, "m/n"); !ok || err != nil {
		t.Errorf("Exists %v %v", ok, err)
	}
	if fi, err := r.Stat(ctx, "dir/a.txt"); err != nil || fi.Size() != 3 {
		t.Errorf("Stat %v %v", fi, err)
	}
	must(t, r.Rename(ctx, "dir/a.txt", "dir/b.txt"))
	must(t, r.Touch(ctx, "dir/b.txt"))
	if b, _ := r.Read(ctx, "dir/b.txt"); string(b) != "two" {
		t.Errorf("after rename+touch: %q", b)
	}
	if rp, err := r.RealPath(ctx, "dir/b.txt"); err != nil || rp != root+"/dir/b.txt" {
		t.Errorf("RealPath %q %v", rp, err)
	}
	must(t, r.Remove(ctx, "m", agentbe.RemoveOptions{Recursive: true}))
	if _, err := r.Stat(ctx, "m"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after remove: %v", err)
	}
	must(t, r.Mkdir(ctx, "work"))
	out, err := r.Exec(ctx, `echo "$GREETING"; pwd; printenv HOME`,
		agentbe.ExecOptions{Dir: "work", Env: map[string]string{"GREETING": "hi 'there'"}})
	if want := "hi 'there'\n" + root + "/work\n" + root + "/work\n"; err != nil || string(out) != want {
		t.Errorf("Exec %q %v, want %q", out, err, want)
	}
	_, err = r.Exec(ctx, "exit 4", agentbe.ExecOptions{})
	var xe *agentbe.ExitError
	if !errors.As(err, &xe) || xe.ExitCode != 4 {
		t.Errorf("exit 4: %v", err)
	}
	s, err := r.Scope("users/u1", agentbe.ScopeOptions{})
	must(t, err)
	must(t, s.Write(ctx, "x.txt", []byte("scoped")))
	if b, err := os.ReadFile(filepath.Join(root, "users/u1/x.txt")); err != nil || string(b) != "scoped" {
		t.Errorf("scoped write landed wrong: %q %v", b, err)
	}
}
