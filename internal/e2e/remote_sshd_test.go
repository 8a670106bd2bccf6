package e2e_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/testenv"
)

// startSSHD runs OpenSSH's sshd as the current user on a free loopback
// port, accepting one key, with OpenSSH's internal SFTP server; knownHosts
// is a known_hosts file holding its host key.
func startSSHD(t *testing.T) (port int, signer ssh.Signer, user, knownHosts string) {
	t.Helper()
	sshd := "/usr/sbin/sshd"
	_, err := os.Stat(sshd)
	testenv.Require(t, err == nil, "sshd (openssh-server)")
	dir := t.TempDir()
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	hostPEM, err := ssh.MarshalPrivateKey(hostPriv, "")
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "host_key"), pem.EncodeToMemory(hostPEM), 0o600))
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	must(t, err)
	_, userPriv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err = ssh.NewSignerFromKey(userPriv)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600))
	port = testenv.FreePort(t)
	knownHosts = filepath.Join(dir, "known_hosts")
	must(t, os.WriteFile(knownHosts, []byte(knownhosts.Line([]string{"127.0.0.1:" + strconv.Itoa(port)}, hostSigner.PublicKey())+"\n"), 0o600))
	cfg := strings.Join([]string{
		"Port " + strconv.Itoa(port), "ListenAddress 127.0.0.1",
		"HostKey " + filepath.Join(dir, "host_key"),
		"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
		"PermitRootLogin prohibit-password", "PasswordAuthentication no", "UsePAM no", "StrictModes no",
		"PidFile none", "Subsystem sftp internal-sftp", "LogLevel ERROR",
	}, "\n") + "\n"
	must(t, os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(cfg), 0o600))
	os.MkdirAll("/run/sshd", 0o755)
	cmd := exec.Command(sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			u := os.Getenv("USER")
			if u == "" {
				u = "root"
			}
			return port, signer, u, knownHosts
		}
	}
	t.Fatalf("sshd did not start:\n%s", out.String())
	return
}

// TestRemoteOverConventionalSSH: TransportSSH against a plain OpenSSH sshd
// (not our daemon): files over its SFTP server, exec with env, HOME and
// cwd through the exported form, a wrong key refused without retry.
func TestRemoteOverConventionalSSH(t *testing.T) {
	ctx := context.Background()
	port, signer, user, knownHosts := startSSHD(t)
	pinned, err := agentbe.HostKeyFromKnownHosts(knownHosts)
	must(t, err)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	r, err := agentbe.NewRemote(agentbe.RemoteConfig{RootDir: root, Host: "127.0.0.1", Transport: agentbe.TransportSSH,
		SSHPort: port, SSHUser: user, SSHSigners: []ssh.Signer{signer}, HostKeyCallback: pinned,
		KeepaliveInterval: -1})
	must(t, err)
	defer r.Destroy(ctx)
	must(t, r.Write(ctx, "d/f.txt", []byte("over sshd")))
	if b, err := r.Read(ctx, "d/f.txt"); err != nil || string(b) != "over sshd" {
		t.Fatalf("Read %q %v", b, err)
	}
	if rp, err := r.RealPath(ctx, "d/f.txt"); err != nil || rp != root+"/d/f.txt" {
		t.Errorf("RealPath %q %v", rp, err)
	}
	out, err := r.Exec(ctx, `echo "$V"; pwd; printenv HOME`, agentbe.ExecOptions{Dir: "d", Env: map[string]string{"V": "x y"}})
	if want := "x y\n" + root + "/d\n" + root + "/d\n"; err != nil || string(out) != want {
		t.Errorf("Exec %q %v, want %q", out, err, want)
	}
	_, wrongKey, _ := ed25519.GenerateKey(rand.Reader)
	wrong, _ := ssh.NewSignerFromKey(wrongKey)
	bad, err := agentbe.NewRemote(agentbe.RemoteConfig{RootDir: root, Host: "127.0.0.1", Transport: agentbe.TransportSSH,
		SSHPort: port, SSHUser: user, SSHSigners: []ssh.Signer{wrong}, HostKeyCallback: pinned})
	must(t, err)
	defer bad.Destroy(ctx)
	if err := bad.Connect(ctx); !errors.Is(err, agentbe.ErrUnauthorized) || !strings.Contains(err.Error(), "refused the credentials") {
		t.Errorf("wrong key: %v", err)
	}
}
