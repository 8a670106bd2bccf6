package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// longToken passes checkAuthToken: the flag tests use it wherever a token
// is not what they test.
const longToken = "a-token-long-enough-for-the-daemon-0123"

// TestAuthTokenRefused: a token shorter than 32 bytes, a published
// placeholder (today's manifest value is exactly 32 bytes) or one character
// repeated is refused from each source, with a message naming the source
// and saying how to make a token, never showing the token.
func TestAuthTokenRefused(t *testing.T) {
	cases := []struct{ tok, err string }{
		{"t0k", "the token is 3 bytes; at least 32"},
		{strings.Repeat("x", 30) + "y", "31 bytes"},
		{"change-me-to-a-long-random-value", "published placeholder"},
		{"CHANGE-ME-TO-A-LONG-RANDOM-VALUE", "published placeholder"},
		{strings.Repeat("a", 64), "published placeholder"},
		{strings.Repeat("0", 64), "published placeholder"},
	}
	dir := t.TempDir()
	for i, c := range cases {
		file := filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(file, []byte(c.tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		w.WriteString(c.tok)
		w.Close()
		fd, err := syscall.Dup(int(r.Fd()))
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, src := range [][]string{
			{"--auth-token", c.tok},
			{"--auth-token-file", file},
			{"--auth-token-fd", strconv.Itoa(fd)},
		} {
			_, err := parseDaemonFlags(append([]string{"--rootDir", "/w"}, src...))
			if err == nil {
				t.Errorf("%s %q accepted", src[0], c.tok)
				continue
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, src[0]+": ") || !strings.Contains(msg, c.err) ||
				!strings.Contains(msg, "openssl rand -hex 32") || strings.Contains(msg, c.tok) {
				t.Errorf("%s %q: %v", src[0], c.tok, err)
			}
		}
	}
}

// TestAuthTokenAccepted: 32 bytes is enough, and what openssl rand -hex 32
// prints passes.
func TestAuthTokenAccepted(t *testing.T) {
	for _, tok := range []string{strings.Repeat("ab", 16), "3f1c0e9a7b52d4e8c6a1f0b9d2e7c4a85b6d1e3f9a0c2b7d8e4f6a1c3b5d7e9f", longToken} {
		cfg, err := parseDaemonFlags([]string{"--rootDir", "/w", "--auth-token", tok})
		if err != nil || cfg.AuthToken != tok {
			t.Errorf("%q: %v", tok, err)
		}
	}
	if _, err := parseDaemonFlags([]string{"--rootDir", "/w"}); err != nil {
		t.Errorf("no token: %v", err) // no token at all stays allowed (the daemon warns off loopback)
	}
}

// TestConventionalSSHDefaultPasswordRefused: --conventional-ssh with the
// published root:agents account, defaulted or given, is refused unless
// --allow-default-ssh-password says the operator means it.
func TestConventionalSSHDefaultPasswordRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--conventional-ssh"}, false},
		{[]string{"--conventional-ssh", "--ssh-users", "root:agents"}, false},
		{[]string{"--conventional-ssh", "--ssh-users", "bob:x1,root:agents"}, false},
		{[]string{"--conventional-ssh", "--allow-default-ssh-password"}, true},
		{[]string{"--conventional-ssh", "--ssh-users", "root:An0ther-pass"}, true},
		{nil, true}, // no sshd: the default account is never created
	} {
		_, err := parseDaemonFlags(append([]string{"--rootDir", "/w"}, tc.args...))
		if tc.ok != (err == nil) {
			t.Errorf("%v: %v", tc.args, err)
		}
		if err != nil && (!strings.Contains(err.Error(), "--allow-default-ssh-password") || !strings.Contains(err.Error(), "--ssh-users-file")) {
			t.Errorf("%v: the refusal does not say what to do: %v", tc.args, err)
		}
	}
}

// TestEntrypointRefusesPlaceholderToken runs the image's entrypoint with
// the real binary as agent-backend on PATH: AUTH_TOKEN set to the old
// manifest's placeholder makes the daemon exit 1 at once, with the advice,
// and the token appears nowhere in what it printed.
func TestEntrypointRefusesPlaceholderToken(t *testing.T) {
	bin := cliBinary(t)
	binDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(binDir, "agent-backend")); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	const placeholder = "change-me-to-a-long-random-value"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot(t), "docker-entrypoint.sh"), "agent-backend", "daemon",
		"--host", "127.0.0.1", "--port", strconv.Itoa(freePort(t)), "--ssh-host-key", filepath.Join(tmp, "key"))
	cmd.Env = []string{"PATH=" + binDir + ":/usr/bin:/bin", "AUTH_TOKEN=" + placeholder,
		"WORKSPACE_ROOT=" + filepath.Join(tmp, "ws"), "AGENTBE_ENTRYPOINT_D=" + filepath.Join(tmp, "init.d"),
		"AGENTBE_AUTHORIZED_KEYS=" + filepath.Join(tmp, "keys"), "AGENTBE_RUN_DIR=" + filepath.Join(tmp, "run"),
		"AGENTBE_SOURCE_DIR=" + filepath.Join(tmp, "src")}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("entrypoint with the placeholder token: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "--auth-token-file: the token is a published placeholder") ||
		!strings.Contains(out.String(), "openssl rand -hex 32") || strings.Contains(out.String(), placeholder) {
		t.Errorf("output:\n%s", out.String())
	}
}
