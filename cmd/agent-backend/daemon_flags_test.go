package main

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseDaemonFlags(t *testing.T) {
	def := daemonConfig{Isolation: "auto", Shell: "auto", Port: 3001, SSHPort: 22, SSHUsers: []sshUser{{"root", "agents"}}}
	with := func(f func(*daemonConfig)) daemonConfig {
		c := def
		c.RootDir = "/w"
		f(&c)
		return c
	}
	cases := []struct {
		args    string
		want    daemonConfig
		wantErr string
	}{
		{"--rootDir /w", with(func(*daemonConfig) {}), ""},
		{"--rootDir /w --local-only --scopePath /users/u1 --isolation bwrap --shell sh", with(func(c *daemonConfig) {
			c.LocalOnly, c.ScopePath, c.Isolation, c.Shell = true, "users/u1", "bwrap", "sh"
		}), ""},
		{"--rootDir=/w --port=4000 --auth-token T --disable-ssh-ws --conventional-ssh --ssh-port 2222 --ssh-users a:b,c:d " +
			"--ssh-host-key /k --ssh-public-key K --ssh-authorized-keys /ak", with(func(c *daemonConfig) {
			c.Port, c.AuthToken, c.DisableSSHWS, c.ConventionalSSH, c.SSHPort = 4000, "T", true, true, 2222
			c.SSHUsers = []sshUser{{"a", "b"}, {"c", "d"}}
			c.SSHHostKey, c.SSHPublicKey, c.SSHAuthorizedKeys = "/k", "K", "/ak"
		}), ""},
		{"", def, "--rootDir is required"},
		{"--local-only", def, "--rootDir is required"},
		{"--rootDir", def, "--rootDir requires a value"},
		{"--rootDir --local-only", def, "--rootDir requires a value"},
		{"--rootDir /w --bogus", def, "unrecognized option: --bogus"},
		{"--rootDir /w stray", def, `unexpected argument "stray"`},
		{"--rootDir /w --local-only=yes", def, "--local-only takes no value"},
		{"--rootDir /w --port 80", def, "--port must be an integer between 1024 and 65535"},
		{"--rootDir /w --port 65536", def, "--port must be"},
		{"--rootDir /w --port abc", def, "--port must be"},
		{"--rootDir /w --ssh-port 0", def, "--ssh-port must be an integer between 1 and 65535"},
		{"--rootDir /w --isolation docker", def, `invalid isolation mode "docker"`},
		{"--rootDir /w --shell zsh", def, `invalid shell "zsh"`},
		{"--rootDir /w --ssh-users a:b,c", def, `invalid --ssh-users entry "c"`},
		{"--rootDir /w --ssh-users :p", def, "invalid --ssh-users entry"},
		{"--rootDir /w --scopePath a/../../b", def, "Scope path must not contain path traversal sequences"},
		{"--rootDir /w --scopePath ..", def, "path traversal"},
	}
	for _, c := range cases {
		got, err := parseDaemonFlags(strings.Fields(c.args))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: error %v, want %q", c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", c.args, got, c.want)
		}
	}
	if _, err := parseDaemonFlags([]string{"--help"}); !errors.Is(err, errHelp) {
		t.Errorf("--help: %v", err)
	}
}

func TestRunDaemonExitCodes(t *testing.T) {
	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--local-only"}, 1, "--rootDir is required"},
		{[]string{"--rootDir", t.TempDir(), "--frobnicate"}, 1, "unrecognized option: --frobnicate"},
		{[]string{"--rootDir", t.TempDir(), "--isolation", "nope"}, 1, "invalid isolation mode"},
		{[]string{"--rootDir", t.TempDir()}, 1, "full daemon mode is not built yet"},
		{[]string{"--help"}, 0, ""},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(append([]string{"daemon"}, c.args...), strings.NewReader(""), &out, &errOut)
		if code != c.code || !strings.Contains(errOut.String(), c.stderr) {
			t.Errorf("%v: exit %d stderr %q, want %d and %q", c.args, code, errOut.String(), c.code, c.stderr)
		}
	}
}
