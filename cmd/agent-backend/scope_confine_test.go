package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/agentbe/agent-backend/internal/testenv"
	"github.com/agentbe/agent-backend/sftpjail"
)

// bobSecret is the canary of the sibling scope users/bob.
const bobSecret = "bob-s3cret-canary-5d2e"

// confinedBinary runs the daemon binary under bwrap with the sibling
// scopes users/alice (one file) and users/bob (the canary).
func confinedBinary(t *testing.T) *daemonProc {
	t.Helper()
	_, err := exec.LookPath("bwrap")
	testenv.Require(t, err == nil, "bwrap")
	d, _ := startDaemonBinary(t, cliBinary(t), "--isolation", "bwrap")
	for _, p := range []string{"users/alice", "users/bob"} {
		if err := os.MkdirAll(filepath.Join(d.root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(d.root, "users/alice/mine.txt"), []byte("alice's"), 0o644)
	os.WriteFile(filepath.Join(d.root, "users/bob/secret.txt"), []byte(bobSecret), 0o644)
	return d
}

// scopedSSH connects an SSH client to d's /ssh with the token and, when
// scope is not empty, X-Scope-Path on the upgrade.
func scopedSSH(t *testing.T, d *daemonProc, scope string) (*ssh.Client, error) {
	t.Helper()
	return tenantClient{t, d.port, "s3cret-token-of-the-cli-tests-0123"}.sshConn(scope)
}

// runScoped runs cmd on a new session of c, with AGENTBE_SCOPE when scope is
// set, and returns stdout, stderr and the error of Run.
func runScoped(t *testing.T, c *ssh.Client, scope, cmd string) (string, string, error) {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if scope != "" {
		if err := s.Setenv("AGENTBE_SCOPE", scope); err != nil {
			return "", "", err
		}
	}
	var out, errOut bytes.Buffer
	s.Stdout, s.Stderr = &out, &errOut
	err = s.Run(cmd)
	return out.String(), errOut.String(), err
}

// TestScopedPTYShellConfined: an interactive shell on a pty of a channel
// scoped with AGENTBE_SCOPE sees only the scope.
func TestScopedPTYShellConfined(t *testing.T) {
	d := confinedBinary(t)
	c, err := scopedSSH(t, d, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Setenv("AGENTBE_SCOPE", "users/alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.RequestPty("xterm", 40, 120, ssh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	in, _ := s.StdinPipe()
	var out bytes.Buffer
	s.Stdout = &out
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	// Errors go nowhere: on a pty they could land amid the listing.
	io.WriteString(in, "exec 2>/dev/null; cat /tmp/agentbe-workspace/users/bob/secret.txt "+filepath.Join(d.root, "users/bob/secret.txt")+
		" ../bob/secret.txt; echo x > ../bob/owned.txt; echo LS; ls -A /tmp/agentbe-workspace; exit 0\n")
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("shell: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("shell did not end:\n%s", out.String())
	}
	o := out.String()
	if strings.Contains(o, bobSecret) {
		t.Errorf("the shell read bob's secret:\n%s", o)
	}
	_, ls, _ := strings.Cut(o, "LS\r\n")
	if ls, _, _ = strings.Cut(ls, "exit"); strings.TrimSpace(ls) != "mine.txt" {
		t.Errorf("ls of the workspace path lists %q, want alice's files only (output:\n%s)", ls, o)
	}
	if names, _ := os.ReadDir(filepath.Join(d.root, "users/bob")); len(names) != 1 {
		t.Errorf("the shell wrote into bob's scope: %v", names)
	}
}

// TestSSHConnectionScope: X-Scope-Path on the upgrade scopes the whole
// connection (exec and SFTP); AGENTBE_SCOPE may narrow it but not leave
// it (the env request and then the exec are refused); the TypeScript
// client's directory prefix must lie inside it; an invalid X-Scope-Path is
// refused before the upgrade.
func TestSSHConnectionScope(t *testing.T) {
	d := confinedBinary(t)
	if _, err := scopedSSH(t, d, "users/../x"); err == nil || !strings.Contains(err.Error(), "HTTP 400") {
		t.Errorf("invalid X-Scope-Path: %v, want the upgrade refused with 400", err)
	}
	c, err := scopedSSH(t, d, "users/alice")
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runScoped(t, c, "", "ls -A /tmp/agentbe-workspace; cat /tmp/agentbe-workspace/users/bob/secret.txt "+
		filepath.Join(d.root, "users/bob/secret.txt"))
	if out != "mine.txt\n" {
		t.Errorf("exec on a connection scoped to users/alice: %q, %v", out, err)
	}
	// Narrowing works, leaving is refused.
	os.MkdirAll(filepath.Join(d.root, "users/alice/sub"), 0o755)
	if out, _, err := runScoped(t, c, "users/alice/sub", "touch t && ls -A /tmp/agentbe-workspace"); err != nil || out != "t\n" {
		t.Errorf("AGENTBE_SCOPE inside the connection's scope: %q, %v", out, err)
	}
	for _, scope := range []string{"users/bob", "users", "/", "users/alice/../bob", "users/alicex"} {
		s, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Setenv("AGENTBE_SCOPE", scope); err == nil {
			t.Errorf("AGENTBE_SCOPE=%s accepted on a connection scoped to users/alice", scope)
		}
		var o bytes.Buffer
		s.Stdout = &o
		if err := s.Run("cat secret.txt ../bob/secret.txt; ls"); err == nil || strings.Contains(o.String(), bobSecret) {
			t.Errorf("exec after a refused AGENTBE_SCOPE=%s: %v %q", scope, err, o.String())
		}
		s.Close()
	}
	// The TypeScript client's prefix: its directory must lie inside the
	// connection's scope.
	bob := filepath.Join(d.root, "users/bob")
	out, errOut, err := runScoped(t, c, "", `HOME='`+bob+`' cd "`+bob+`" && cat secret.txt`)
	var ee *ssh.ExitError
	if strings.Contains(out, bobSecret) || !errors.As(err, &ee) || ee.ExitStatus() != 1 || !strings.Contains(errOut, "outside") {
		t.Errorf("prefix naming bob on alice's connection: %q %q %v", out, errOut, err)
	}
	// SFTP of the connection is jailed at its scope.
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, _ := s.StdinPipe()
	r, _ := s.StdoutPipe()
	if err := s.RequestSubsystem("sftp"); err != nil {
		t.Fatal(err)
	}
	sc := sftpClient(t, r, w)
	if names, err := sc.ReadDir(context.Background(), "/"); err != nil || len(names) != 2 {
		t.Errorf("SFTP root of alice's connection: %v %v", names, err)
	}
}

// sftpClient speaks SFTP over a session's stdout (r) and stdin (w).
func sftpClient(t *testing.T, r io.Reader, w io.WriteCloser) *sftpjail.Client {
	t.Helper()
	c, err := sftpjail.NewClient(struct {
		io.Reader
		io.WriteCloser
	}{r, w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
