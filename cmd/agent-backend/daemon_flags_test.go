package main

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/internal/buildinfo"
)

func TestParseDaemonFlags(t *testing.T) {
	def := daemonConfig{Isolation: "auto", Shell: "auto", Port: 3001, SSHPort: 22, SSHUsers: []sshUser{{"root", "agents"}},
		MaxSSHConns: 64, MaxInFlight: 256, MaxACPInstances: 64, MaxChannelsPerConn: 16, MaxUploads: 32}
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
		{"--rootDir=/w --port=4000 --auth-token " + longToken + " --disable-ssh-ws --conventional-ssh --ssh-port 2222 --ssh-users a:b,c:d " +
			"--ssh-host-key /k --ssh-public-key K --ssh-authorized-keys /ak", with(func(c *daemonConfig) {
			c.Port, c.AuthToken, c.DisableSSHWS, c.ConventionalSSH, c.SSHPort = 4000, longToken, true, true, 2222
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
		{"--rootDir /w --isolation docker", def, `--isolation: invalid isolation mode "docker"`},
		{"--rootDir /w --shell zsh", def, `--shell: invalid shell "zsh"`},
		{"--rootDir /w --ssh-users a:b,c", def, `--ssh-users: invalid entry 2: expected user:pass`},
		{"--rootDir /w --ssh-users :p", def, "--ssh-users: invalid entry 1: no user"},
		{"--rootDir /w --ssh-users a:", def, `--ssh-users: invalid entry 1 (user "a"): no password`},
		{"--rootDir /w --ssh-users ,", def, "--ssh-users: invalid entry"},
		{"--rootDir /w --ssh-users a:b --ssh-users-file /f", def, "mutually exclusive"},
		{"--rootDir /w --ssh-users-file /nonexistent/users", def, "--ssh-users-file: "},
		{"--rootDir /w --local-only --ssh-users-file -", def, "stdin carries MCP"},
		{"--rootDir /w --ssh-users-fd 1", def, `--ssh-users-fd: invalid descriptor "1"`},
		{"--rootDir /w --scopePath a/../../b", def, "Scope path must not contain path traversal sequences"},
		{"--rootDir /w --tenants /t.json --max-uploads 3", with(func(c *daemonConfig) {
			c.TenantsFile, c.MaxUploads = "/t.json", 3
		}), ""},
		{"--rootDir /w --tenants /t.json --scopePath a", def, "--tenants and --scopePath are mutually exclusive"},
		{"--rootDir /w --tenants /t.json --local-only", def, "--tenants needs the network daemon"},
		{"--rootDir /w --tenants=", def, "--tenants must not be empty"},
		{"--rootDir /w --max-uploads 0", def, "--max-uploads must be an integer between 1 and"},
		{"--rootDir /w --scopePath ..", def, "path traversal"},
		{"--rootDir /w --scopePath a//b", def, "--scopePath"},
		{"--rootDir --port 4000", def, "--rootDir requires a value"},
		{"--rootDir /w --port", def, "--port requires a value"},
		{"--rootDir /w --port 1023", def, "--port must be"},
		{"--rootDir /w --port 1024", with(func(c *daemonConfig) { c.Port = 1024 }), ""},
		{"--rootDir /w --log-level debug", with(func(c *daemonConfig) { c.LogLevel = slog.LevelDebug }), ""},
		{"--rootDir /w --log-level WARN", with(func(c *daemonConfig) { c.LogLevel = slog.LevelWarn }), ""},
		{"--rootDir /w --log-level loud", def, `--log-level: invalid level "loud"`},
		{"--rootDir /w --log-format json", with(func(c *daemonConfig) { c.LogFormat = "json" }), ""},
		{"--rootDir /w --log-format text", with(func(c *daemonConfig) { c.LogFormat = "text" }), ""},
		{"--rootDir /w --log-format xml", def, `--log-format: invalid format "xml"`},
		{"--rootDir /w --audit-log /var/log/a.jsonl", with(func(c *daemonConfig) { c.AuditLog = "/var/log/a.jsonl" }), ""},
		{"--rootDir /w --audit-log -", with(func(c *daemonConfig) { c.AuditLog = "-" }), ""},
		{"--rootDir /w --audit-log=", def, "--audit-log must name a file"},
		{"--rootDir /w --local-only --audit-log -", def, "stdout carries MCP"},
		{"--rootDir /w --port 65535", with(func(c *daemonConfig) { c.Port = 65535 }), ""},
		{"--rootDir /w --ssh-port 1", with(func(c *daemonConfig) { c.SSHPort = 1 }), ""},
		{"--rootDir /w --ssh-port 65536", def, "--ssh-port must be"},
		{"--rootDir /w --ssh-port -1", def, "--ssh-port must be"},
		{"--rootDir /w --ssh-port x", def, "--ssh-port must be"},
		{"--rootDir /w --host 127.0.0.1", with(func(c *daemonConfig) { c.Host = "127.0.0.1" }), ""},
		{"--rootDir /w --host", def, "--host requires a value"},
		{"--rootDir /w --scopePath a..b", with(func(c *daemonConfig) { c.ScopePath = "a..b" }), ""},
		{"--rootDir /w --auth-token", def, "--auth-token requires a value"},
		{"--rootDir /w --auth-token-file /nonexistent/tok", def, "--auth-token-file: "},
		{"--rootDir /w --auth-token x --auth-token-file /f", def, "mutually exclusive"},
		{"--rootDir /w --disable-ssh-ws=1", def, "--disable-ssh-ws takes no value"},
		{"--rootDir /w --max-ssh-conns 2 --max-inflight=3 --max-acp-instances 4 --max-channels-per-conn 5", with(func(c *daemonConfig) {
			c.MaxSSHConns, c.MaxInFlight, c.MaxACPInstances, c.MaxChannelsPerConn = 2, 3, 4, 5
		}), ""},
		{"--rootDir /w --max-ssh-conns 1048576", with(func(c *daemonConfig) { c.MaxSSHConns = 1 << 20 }), ""},
		{"--rootDir /w --max-ssh-conns 0", def, "--max-ssh-conns must be an integer between 1 and 1048576"},
		{"--rootDir /w --max-inflight -1", def, "--max-inflight must be an integer between 1 and"},
		{"--rootDir /w --max-acp-instances many", def, `--max-acp-instances must be an integer between 1 and 1048576, got "many"`},
		{"--rootDir /w --max-channels-per-conn 1048577", def, "--max-channels-per-conn must be"},
		{"--rootDir /w --max-inflight", def, "--max-inflight requires a value"},
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
		{[]string{"--rootDir", t.TempDir(), "--isolation", "nope"}, 1, "--isolation: invalid isolation mode"},
		{[]string{"--rootDir", "--port", "3001"}, 1, "--rootDir requires a value"},
		{[]string{"--rootDir", t.TempDir(), "--port", "99999"}, 1, "--port must be"},
		{[]string{"--rootDir", t.TempDir(), "--ssh-users", "root"}, 1, "--ssh-users: invalid entry"},
		{[]string{"--help"}, 0, ""},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(append([]string{"daemon"}, c.args...), strings.NewReader(""), &out, &errOut)
		if code != c.code || !strings.Contains(errOut.String(), c.stderr) {
			t.Errorf("%v: exit %d stderr %q, want %d and %q", c.args, code, errOut.String(), c.code, c.stderr)
		}
		if c.code == 1 && strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("%v: the error is not one line: %q", c.args, errOut.String())
		}
		if c.code == 0 {
			for _, want := range []string{"--auth-token-file", "--max-ssh-conns N", "(default 64)", "--max-inflight N",
				"(default 256)", "--max-acp-instances N", "--max-channels-per-conn N", "daemon full"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("daemon --help lacks %q: %s", want, out.String())
				}
			}
		}
	}
}

func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ content, want, err string }{
		{longToken + "\n", longToken, ""},
		{"  " + longToken + "  \r\n", longToken, ""},
		{"", "", "no token"},
		{"\n\n", "", "no token"},
		{"a\nb", "", "single line"},
	}
	for i, c := range cases {
		p := filepath.Join(dir, strconv.Itoa(i))
		os.WriteFile(p, []byte(c.content), 0o600)
		cfg, err := parseDaemonFlags([]string{"--rootDir", "/w", "--auth-token-file", p})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "--auth-token-file") {
				t.Errorf("%q: %v", c.content, err)
			}
			continue
		}
		if err != nil || cfg.AuthToken != c.want {
			t.Errorf("%q: %q %v", c.content, cfg.AuthToken, err)
		}
	}
}

func TestTopLevel(t *testing.T) {
	cases := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--version"}, 0, "agent-backend " + version + " (" + buildinfo.Read().String() + ")\n"},
		{[]string{"--help"}, 0, "ssh-proxy"},
		{[]string{"bogus"}, 1, ""},
		{[]string{"ssh-proxy"}, 1, ""},
		{[]string{"ssh-proxy", "--url", "http://x/ssh"}, 1, ""},
		{[]string{"ssh-proxy", "--help"}, 0, "usage: agent-backend ssh-proxy"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(c.args, strings.NewReader(""), &out, &errOut)
		if code != c.code || !strings.Contains(out.String(), c.out) {
			t.Errorf("%v: %d %q %q", c.args, code, out.String(), errOut.String())
		}
	}
}

func TestParseACPAgentFlags(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/agents.json"
	if err := os.WriteFile(file, []byte(`[{"id":"a","command":"node a.mjs"},{"id":"b","command":"node b.mjs"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseDaemonFlags([]string{"--rootDir", dir, "--acp-agent", "b=node b2.mjs", "--acp-agents-file", file,
		"--acp-agent", "c=node c.mjs"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range cfg.ACPAgents {
		got = append(got, a.ID+"="+a.Command)
	}
	if strings.Join(got, ";") != "a=node a.mjs;b=node b.mjs;b=node b2.mjs;c=node c.mjs" {
		t.Errorf("agents %v (file first, then flags in order)", got)
	}
	for _, bad := range [][]string{
		{"--rootDir", dir, "--acp-agent", "noequals"},
		{"--rootDir", dir, "--acp-agents-file", dir + "/missing.json"},
		{"--rootDir", dir, "--acp-agent"},
	} {
		if _, err := parseDaemonFlags(bad); err == nil || !strings.Contains(err.Error(), "--acp-agent") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
