package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/daemon"
)

// runCLI runs the CLI in process and returns its exit code and outputs.
func runCLI(args ...string) (int, string, string) {
	var out, errOut strings.Builder
	code := run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestHostKeyCommand: the fingerprint is the one `ssh-keygen -lf` prints
// for the key the daemon generates (RSA-2048 at a path named
// ssh_host_ed25519_key), and OpenSSH's `ssh-keygen -F` finds the printed
// line under the names and port given, and only there.
func TestHostKeyCommand(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	need(t, err == nil, "ssh-keygen (OpenSSH)")
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "ssh_host_ed25519_key")
	signer, err := daemon.LoadOrCreateHostKey(keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := signer.PublicKey()
	out, err := exec.Command(keygen, "-lf", keyFile).Output()
	if err != nil {
		t.Fatal(err)
	}
	keygenFP := strings.Fields(string(out))[1]
	if keygenFP != ssh.FingerprintSHA256(pub) || !strings.HasSuffix(strings.TrimSpace(string(out)), "(RSA)") {
		t.Fatalf("ssh-keygen -lf: %s", out)
	}

	for _, c := range []struct {
		args           []string
		found, missing []string // names for ssh-keygen -F
	}{
		{nil, []string{"[localhost]:3001", "[127.0.0.1]:3001", "[::1]:3001"}, []string{"localhost", "[localhost]:3002"}},
		{[]string{"--host", "daemon.example,10.0.0.5", "--port", "4000"}, []string{"[daemon.example]:4000", "[10.0.0.5]:4000"},
			[]string{"[localhost]:4000", "daemon.example", "[daemon.example]:3001"}},
		{[]string{"--host", "daemon.example", "--port", "22"}, []string{"daemon.example"}, []string{"[daemon.example]:3001"}},
	} {
		code, stdout, stderr := runCLI(append([]string{"hostkey", "--file", keyFile}, c.args...)...)
		if code != 0 || stderr != "" {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr)
		}
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if len(lines) != 2 || lines[0] != fmt.Sprintf("# %s (ssh-rsa, %s)", keygenFP, keyFile) {
			t.Fatalf("%v: output %q", c.args, stdout)
		}
		kh := filepath.Join(t.TempDir(), "known_hosts")
		if err := os.WriteFile(kh, []byte(stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, name := range c.found {
			if out, err := exec.Command(keygen, "-F", name, "-f", kh).CombinedOutput(); err != nil || !strings.Contains(string(out), "ssh-rsa") {
				t.Errorf("%v: ssh-keygen -F %s: %v %s", c.args, name, err, out)
			}
		}
		for _, name := range c.missing {
			if out, err := exec.Command(keygen, "-F", name, "-f", kh).CombinedOutput(); err == nil {
				t.Errorf("%v: ssh-keygen -F %s found %s", c.args, name, out)
			}
		}
	}

	// A public key file gives the same answer.
	pubFile := filepath.Join(dir, "key.pub")
	os.WriteFile(pubFile, ssh.MarshalAuthorizedKey(pub), 0o644)
	if code, stdout, _ := runCLI("hostkey", "--file", pubFile); code != 0 || !strings.HasPrefix(stdout, "# "+keygenFP+" ") {
		t.Errorf("public key file: %d %q", code, stdout)
	}

	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, []byte("not a key"), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--file is required"},
		{[]string{"--file", filepath.Join(dir, "missing")}, "no key at"},
		{[]string{"--file", garbage}, "neither an SSH private key nor a public key"},
		{[]string{"--file", keyFile, "--port", "0"}, "--port must be"},
		{[]string{"--file", keyFile, "--host", "a b"}, "invalid name"},
		{[]string{"--file", keyFile, "--host", "a,,b"}, "invalid name"},
		{[]string{"--file", keyFile, "extra"}, "unexpected argument"},
		{[]string{"--nope"}, "flag provided but not defined"},
	} {
		code, stdout, stderr := runCLI(append([]string{"hostkey"}, c.args...)...)
		if code == 0 || stdout != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want %q)", c.args, code, stdout, stderr, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"hostkey", "--help"}, []string{"RSA-2048 key despite its name", "known_hosts"}},
		{[]string{"daemon", "--help"}, []string{"ssh_host_ed25519_key", "RSA-2048 whatever the name", "agent-backend hostkey --file PATH"}},
		{[]string{"--help"}, []string{"agent-backend hostkey --file KEYFILE"}},
	} {
		code, stdout, _ := runCLI(c.args...)
		flat := strings.Join(strings.Fields(stdout), " ")
		for _, w := range c.want {
			w = strings.Join(strings.Fields(w), " ")
			if code != 0 || !strings.Contains(flat, w) {
				t.Errorf("%v: exit %d, no %q in %s", c.args, code, w, stdout)
			}
		}
	}
}

// TestHostKeyLineAccepted: the line `agent-backend hostkey` prints for a
// running daemon is accepted by OpenSSH (ssh through ssh-proxy with strict
// host key checking) and by the library (HostKeyFromKnownHosts); a line
// with another key makes both refuse.
func TestHostKeyLineAccepted(t *testing.T) {
	_, err := exec.LookPath("ssh")
	need(t, err == nil, "ssh (OpenSSH client)")
	bin := cliBinary(t)
	d, _ := startDaemonBinary(t, bin)
	keyFile := filepath.Join(filepath.Dir(d.root), "keys", "host_key")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(keyFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon wrote no host key")
		}
	}
	port := strconv.Itoa(d.port)
	out, err := exec.Command(bin, "hostkey", "--file", keyFile, "--host", "127.0.0.1", "--port", port).Output()
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(good, out, 0o600)
	otherKey := filepath.Join(t.TempDir(), "other")
	if _, err := daemon.LoadOrCreateHostKey(otherKey, nil); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(bin, "hostkey", "--file", otherKey, "--host", "127.0.0.1", "--port", port).Output()
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(bad, out, 0o600)

	strictSSH := func(knownHosts string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		proxy := fmt.Sprintf("%s ssh-proxy --url ws://127.0.0.1:%d/ssh --token-file %s", bin, d.port, d.tokenFile)
		out, err := exec.CommandContext(ctx, "ssh", "-F", "/dev/null", "-o", "ProxyCommand="+proxy,
			"-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile="+knownHosts, "-o", "GlobalKnownHostsFile=/dev/null",
			"-o", "BatchMode=yes", "-p", port, "agent@127.0.0.1", "echo pinned").CombinedOutput()
		return string(out), err
	}
	if out, err := strictSSH(good); err != nil || out != "pinned\n" {
		t.Errorf("ssh with the printed known_hosts line: %v %q", err, out)
	}
	if out, err := strictSSH(bad); err == nil || !strings.Contains(out, "Host key verification failed") {
		t.Errorf("ssh with another key's line: %v %q", err, out)
	}

	for name, file := range map[string]string{"good": good, "bad": bad} {
		cb, err := agentbe.HostKeyFromKnownHosts(file)
		if err != nil {
			t.Fatal(err)
		}
		r, err := agentbe.NewRemote(agentbe.RemoteConfig{RootDir: d.root, Host: "127.0.0.1", Port: d.port,
			Token: "s3cret-token-of-the-cli-tests-0123", HostKeyCallback: cb, KeepaliveInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		err = r.Write(context.Background(), "pinned.txt", []byte("x"))
		r.Destroy(context.Background())
		if refused := errors.Is(err, agentbe.ErrHostKeyRefused); (name == "bad") != refused || (name == "good" && err != nil) {
			t.Errorf("library with the %s line: %v", name, err)
		}
	}
}
