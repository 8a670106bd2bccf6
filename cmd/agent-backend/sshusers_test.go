package main

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSSHUsersFile: --ssh-users-file takes entries one a line or comma
// separated, skips blank and comment lines, reads stdin for "-", and its
// errors never show a password.
func TestSSHUsersFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "users")
	os.WriteFile(f, []byte("# accounts\nalice:pw one\n\nbob:x:y, carol:z\n"), 0o600)
	cfg, err := parseDaemonFlags([]string{"--rootDir", "/w", "--ssh-users-file", f})
	want := []sshUser{{"alice", "pw one"}, {"bob", "x:y"}, {"carol", "z"}}
	if err != nil || !reflect.DeepEqual(cfg.SSHUsers, want) {
		t.Errorf("file: %v %v", cfg.SSHUsers, err)
	}

	stdinUsers.r = strings.NewReader("dave:from-stdin\n")
	t.Cleanup(func() { stdinUsers.r = nil })
	for range 2 { // parsed twice when the daemon re-executes itself
		cfg, err = parseDaemonFlags([]string{"--rootDir", "/w", "--ssh-users-file", "-"})
		if err != nil || !reflect.DeepEqual(cfg.SSHUsers, []sshUser{{"dave", "from-stdin"}}) {
			t.Errorf("stdin: %v %v", cfg.SSHUsers, err)
		}
	}

	for _, bad := range []string{"alice:s3cret-pw\n:hunter2-pw\n", "s3cret-pw\n", "\n# none\n"} {
		os.WriteFile(f, []byte(bad), 0o600)
		_, err := parseDaemonFlags([]string{"--rootDir", "/w", "--ssh-users-file", f})
		if err == nil || strings.Contains(err.Error(), "pw") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestSSHUsersFD: the descriptor the daemon hands itself on re-exec.
func TestSSHUsersFD(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("a:b\nc:d e\n")
	w.Close()
	fd, err := syscall.Dup(int(r.Fd()))
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parseDaemonFlags([]string{"--rootDir", "/w", "--ssh-users-fd", strconv.Itoa(fd)})
	if err != nil || !reflect.DeepEqual(cfg.SSHUsers, []sshUser{{"a", "b"}, {"c", "d e"}}) {
		t.Errorf("%v %v", cfg.SSHUsers, err)
	}
}

// TestDefaultSSHUserWarns: the spec's default root:agents, given or
// defaulted, is warned about at start when the operator opted in to it
// (--allow-default-ssh-password; without it the daemon refuses, see
// TestConventionalSSHDefaultPasswordRefused); other accounts are not.
func TestDefaultSSHUserWarns(t *testing.T) {
	for _, tc := range []struct {
		args []string
		warn bool
	}{
		{nil, true},
		{[]string{"--ssh-users", "root:agents"}, true},
		{[]string{"--ssh-users", "bob:agents,root:other"}, false},
	} {
		cfg, err := parseDaemonFlags(append([]string{"--rootDir", "/w", "--conventional-ssh", "--allow-default-ssh-password"}, tc.args...))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		sc := sshdConfig(cfg, slog.New(slog.NewTextHandler(&buf, nil)))
		if got := strings.Contains(buf.String(), "level=WARN") && strings.Contains(buf.String(), "root"); got != tc.warn {
			t.Errorf("%v: warned %v: %s", tc.args, got, buf.String())
		}
		if len(sc.Users) != len(cfg.SSHUsers) {
			t.Errorf("%v: users %v", tc.args, sc.Users)
		}
	}
}

// TestSSHUsersLeaveArgvAndEnv: the daemon binary given --ssh-users (and
// SSH_USERS in its environment), or the accounts on stdin, re-executes
// itself with them on a descriptor: no password is left in
// /proc/PID/cmdline (what ps shows every user) or /proc/PID/environ.
func TestSSHUsersLeaveArgvAndEnv(t *testing.T) {
	bin := cliBinary(t)
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
	}{
		{"argv", []string{"--ssh-users", "alice:pw-in-argv-1,bob:pw-in-argv-2"}, ""},
		{"stdin", []string{"--ssh-users-file", "-"}, "alice:pw-in-argv-1\nbob:pw-in-argv-2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := freePort(t)
			cmd := exec.Command(bin, append([]string{"daemon", "--rootDir", t.TempDir(), "--host", "127.0.0.1",
				"--port", strconv.Itoa(port), "--isolation", "software", "--ssh-host-key", filepath.Join(t.TempDir(), "k")},
				tc.args...)...)
			cmd.Env = append(os.Environ(), "SSH_USERS=alice:pw-in-argv-1", "COPY=pw-in-argv-2")
			cmd.Stdin = strings.NewReader(tc.stdin)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				cmd.Process.Signal(syscall.SIGTERM)
				cmd.Wait()
			}()
			waitHealth(t, port, time.Now())
			pid := strconv.Itoa(cmd.Process.Pid)
			argv, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			env, _ := os.ReadFile("/proc/" + pid + "/environ")
			if len(argv) == 0 || len(env) == 0 {
				t.Fatal("cannot read the daemon's /proc files")
			}
			for what, b := range map[string][]byte{"cmdline": argv, "environ": env} {
				if bytes.Contains(b, []byte("pw-in-argv")) {
					t.Errorf("/proc/%s/%s holds a password: %q", pid, what, bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
				}
			}
			if !bytes.Contains(argv, []byte("--ssh-users-fd\x00")) || bytes.Contains(argv, []byte("--ssh-users-file")) {
				t.Errorf("argv: %q", bytes.ReplaceAll(argv, []byte{0}, []byte{' '}))
			}
		})
	}
}

// TestDaemonHelpConventionalSSH: --help says what --conventional-ssh
// changes on the machine and how to keep passwords out of ps.
func TestDaemonHelpConventionalSSH(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"daemon", "--help"}, strings.NewReader(""), &out, &out); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"creates the users as", "system accounts", "drop-in", "removed on exit",
		"--ssh-users-file", "root:agents", "ps"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}
