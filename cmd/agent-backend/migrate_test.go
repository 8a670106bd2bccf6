package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/daemon"
)

const migrateToken = "0123456789abcdef0123456789abcdef0123456789abcdef"

// migrateDaemon is an in-process daemon with migrateToken.
type migrateDaemon struct {
	addr, root, keyFile string
}

func startMigrateDaemon(t *testing.T) *migrateDaemon {
	t.Helper()
	d := &migrateDaemon{root: t.TempDir(), keyFile: filepath.Join(t.TempDir(), "host_key")}
	s, err := daemon.New(daemon.Config{RootDir: d.root, AuthToken: migrateToken, Isolation: "none",
		SSHHostKeyPath: d.keyFile, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.HostKey(context.Background()); err != nil { // writes the key file
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done; s.Close() })
	d.addr = ln.Addr().String()
	return d
}

// knownHosts writes the known_hosts lines `agent-backend hostkey` prints
// for the daemons.
func knownHosts(t *testing.T, daemons []*migrateDaemon) string {
	t.Helper()
	var all strings.Builder
	for _, d := range daemons {
		host, port, _ := net.SplitHostPort(d.addr)
		code, out, errOut := runCLI("hostkey", "--file", d.keyFile, "--host", host, "--port", port)
		if code != 0 {
			t.Fatalf("hostkey: %d %s", code, errOut)
		}
		all.WriteString(out)
	}
	p := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(p, []byte(all.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func shardsOf(daemons []*migrateDaemon) string {
	var s []string
	for _, d := range daemons {
		s = append(s, d.addr)
	}
	return strings.Join(s, ",")
}

// TestMigrateCommand: three daemons to four through the CLI: a dry run
// copies nothing; the run moves exactly the planned tenants and keeps
// their sources; a second run with --delete-source removes the sources; a
// stray directory is reported and left alone.
func TestMigrateCommand(t *testing.T) {
	var daemons []*migrateDaemon
	for i := 0; i < 4; i++ {
		daemons = append(daemons, startMigrateDaemon(t))
	}
	from, to := shardsOf(daemons[:3]), shardsOf(daemons)
	oldList, newList := strings.Split(from, ","), strings.Split(to, ",")
	byAddr := map[string]*migrateDaemon{}
	for _, d := range daemons {
		byAddr[d.addr] = d
	}
	var moving []string
	for i := 0; i < 30; i++ {
		key := fmt.Sprintf("user%02d", i)
		dir := filepath.Join(byAddr[agentbe.ShardFor(key, oldList)].root, "work", key, "src")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package "+key), 0o644); err != nil {
			t.Fatal(err)
		}
		if agentbe.ShardFor(key, oldList) != agentbe.ShardFor(key, newList) {
			moving = append(moving, key)
		}
	}
	if len(moving) == 0 {
		t.Fatal("no tenant moves")
	}
	// A stray: a copy of a tenant on a daemon that is not its shard.
	strayKey := "user00"
	home := agentbe.ShardFor(strayKey, oldList)
	strayOn := oldList[0]
	if strayOn == home {
		strayOn = oldList[1]
	}
	if err := os.MkdirAll(filepath.Join(byAddr[strayOn].root, "work", strayKey), 0o755); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte(migrateToken+"\n"), 0o600)
	journal := filepath.Join(t.TempDir(), "journal")
	args := []string{"migrate", "--from", from, "--to", to, "--prefix", "work", "--token-file", tok,
		"--known-hosts", knownHosts(t, daemons), "--journal", journal}

	code, out, errOut := runCLI(append(args, "--dry-run")...)
	if code != 0 {
		t.Fatalf("dry run: %d %s", code, errOut)
	}
	if want := fmt.Sprintf("30 tenants: %d move, %d stay", len(moving), 30-len(moving)); !strings.Contains(out, want) {
		t.Errorf("dry run output lacks %q:\n%s", want, out)
	}
	if !strings.Contains(out, fmt.Sprintf("work/%s on %s is a stray", strayKey, strayOn)) {
		t.Errorf("stray not reported:\n%s", out)
	}
	for _, k := range moving {
		if !strings.Contains(out, fmt.Sprintf("  %s (work/%s): ", k, k)) {
			t.Errorf("%s not in the plan:\n%s", k, out)
		}
	}
	if _, err := os.Stat(filepath.Join(daemons[3].root, "work")); !os.IsNotExist(err) {
		t.Errorf("the dry run wrote: %v", err)
	}

	code, out, errOut = runCLI(args...)
	if code != 0 {
		t.Fatalf("migrate: %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("agent-backend migrate:\n%s", out)
	if want := fmt.Sprintf("summary: %d tenants: %d moved, 0 failed", len(moving), len(moving)); !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	for _, k := range moving {
		for _, d := range []string{agentbe.ShardFor(k, oldList), agentbe.ShardFor(k, newList)} {
			got, err := os.ReadFile(filepath.Join(byAddr[d].root, "work", k, "src", "main.go"))
			if err != nil || string(got) != "package "+k {
				t.Errorf("%s on %s: %q %v", k, d, got, err)
			}
		}
	}
	if !strings.Contains(out, "sources kept") {
		t.Errorf("no word on the kept sources:\n%s", out)
	}

	code, out, errOut = runCLI(append(args, "--delete-source")...)
	if code != 0 {
		t.Fatalf("delete sources: %d\n%s\n%s", code, out, errOut)
	}
	for _, k := range moving {
		if !strings.Contains(out, k+": moved by an earlier run; source deleted") {
			t.Errorf("%s: source not reported deleted:\n%s", k, out)
		}
		if _, err := os.Stat(filepath.Join(byAddr[agentbe.ShardFor(k, oldList)].root, "work", k)); !os.IsNotExist(err) {
			t.Errorf("%s: source still there: %v", k, err)
		}
	}
	if _, err := os.Stat(filepath.Join(byAddr[strayOn].root, "work", strayKey)); err != nil {
		t.Errorf("the stray was touched: %v", err)
	}

	// An explicit key list; a key without a directory has nothing to move.
	keys := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(keys, []byte("# tenants\n"+strings.Join(moving, "\n")+"\nnobody-here\n"), 0o600)
	code, out, errOut = runCLI(append(args, "--keys", keys, "--journal", filepath.Join(t.TempDir(), "j2"))...)
	if code != 0 {
		t.Fatalf("--keys: %d\n%s\n%s", code, out, errOut)
	}
	for _, k := range moving {
		if !strings.Contains(out, k+": no directory on") {
			t.Errorf("%s: %s", k, out)
		}
	}
}

// TestMigrateCommandRefuses: missing or bad flags, and a daemon whose host
// key is not the pinned one, fail with a clear message and exit 1.
func TestMigrateCommandRefuses(t *testing.T) {
	a, b := startMigrateDaemon(t), startMigrateDaemon(t)
	kh := knownHosts(t, []*migrateDaemon{a, b})
	other := startMigrateDaemon(t)
	wrong := knownHosts(t, []*migrateDaemon{other})
	// The other daemon's key under a's and b's addresses.
	lines, _ := os.ReadFile(wrong)
	var swapped strings.Builder
	for _, d := range []*migrateDaemon{a, b} {
		_, port, _ := net.SplitHostPort(d.addr)
		_, oport, _ := net.SplitHostPort(other.addr)
		swapped.WriteString(strings.ReplaceAll(string(lines), ":"+oport+"]", ":"+port+"]"))
	}
	os.WriteFile(wrong, []byte(swapped.String()), 0o600)
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte(migrateToken), 0o600)
	base := []string{"migrate", "--from", a.addr, "--to", a.addr + "," + b.addr, "--prefix", "t", "--token-file", tok,
		"--journal", filepath.Join(t.TempDir(), "j")}
	if err := os.MkdirAll(filepath.Join(a.root, "t", "k"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no known hosts", base, "--known-hosts is required"},
		{"no prefix", []string{"migrate", "--from", a.addr, "--to", b.addr, "--known-hosts", kh}, "--prefix is required"},
		{"bad shard", append(base, "--known-hosts", kh, "--from", "nohost"), `"nohost" is not host:port`},
		{"no to", []string{"migrate", "--from", a.addr, "--prefix", "t", "--known-hosts", kh}, "--to is required"},
		{"bad parallel", append(base, "--known-hosts", kh, "--parallel", "0"), "--parallel must be at least 1"},
		{"missing keys file", append(base, "--known-hosts", kh, "--keys", "/nonexistent/keys"), "--keys: no such file"},
		{"bad key", append(base, "--known-hosts", kh, "--keys", writeTemp(t, "a/b\n")), `key "a/b" is not a usable directory name`},
		{"wrong host key", append(base, "--known-hosts", wrong), "host key"},
		{"wrong token", append(base, "--known-hosts", kh, "--token-file", writeTemp(t, strings.Repeat("x", 48))), "refused the token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(tc.args...)
			if code != 1 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q (stdout %q), want %q", code, errOut, out, tc.want)
			}
		})
	}
	if code, out, _ := runCLI("migrate", "--help"); code != 0 || !strings.Contains(out, "--delete-source") {
		t.Errorf("--help: %d %q", code, out)
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
