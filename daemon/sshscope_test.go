package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/sftpjail"
	"golang.org/x/crypto/ssh"
)

func TestScopeContains(t *testing.T) {
	for _, c := range []struct {
		outer, scope string
		within       bool
		rel          string
	}{
		{"", "", true, ""},
		{"", "users/alice", true, "users/alice"},
		{"users/alice", "users/alice", true, ""},
		{"users/alice", "users/alice/sub", true, "sub"},
		{"users/alice", "users/alicex", false, ""},
		{"users/alice", "users", false, ""},
		{"users/alice", "", false, ""},
		{"users/alice", "users/bob", false, ""},
	} {
		if got := scopeContains(c.outer, c.scope); got != c.within {
			t.Errorf("scopeContains(%q, %q) = %v", c.outer, c.scope, got)
		}
		if c.within {
			if got := scopeRel(c.outer, c.scope); got != c.rel {
				t.Errorf("scopeRel(%q, %q) = %q, want %q", c.outer, c.scope, got, c.rel)
			}
		}
	}
}

// scopedRun runs cmd on a new session of c after env AGENTBE_SCOPE=scope
// (none when scope is "-"); envErr is the env request's outcome.
func scopedRun(t *testing.T, c *ssh.Client, scope, cmd string) (out, errOut string, envErr, err error) {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if scope != "-" {
		envErr = s.Setenv("AGENTBE_SCOPE", scope)
	}
	var o, e bytes.Buffer
	s.Stdout, s.Stderr = &o, &e
	err = s.Run(cmd)
	return o.String(), e.String(), envErr, err
}

// TestSSHChannelScopeRules: what AGENTBE_SCOPE accepts (relative or
// absolute under the root, inside the connection's and the static scope)
// and refuses (invalid, outside, through a link), that the variable never
// reaches the command, and that the TypeScript prefix's directory is
// neither created nor allowed outside the channel's scope.
func TestSSHChannelScopeRules(t *testing.T) {
	d := startDaemon(t, Config{Isolation: "none"})
	root := d.RootDir()
	os.MkdirAll(filepath.Join(root, "users/alice/sub"), 0o755)
	os.MkdirAll(filepath.Join(root, "users/bob"), 0o755)
	os.Symlink("bob", filepath.Join(root, "users/link"))
	c := sshClient(t, d, "", "")
	for _, scope := range []string{"users/alice", "/users/alice", root + "/users/alice", "users/alice/"} {
		out, _, envErr, err := scopedRun(t, c, scope, "pwd; printenv AGENTBE_SCOPE; true")
		if envErr != nil || err != nil || strings.TrimSpace(out) != filepath.Join(root, "users/alice") {
			t.Errorf("AGENTBE_SCOPE=%s: %q %v %v", scope, out, envErr, err)
		}
	}
	for _, scope := range []string{"../x", "users/../../x", "a//b", "users/\x01"} {
		if _, _, envErr, err := scopedRun(t, c, scope, "true"); envErr == nil || err == nil {
			t.Errorf("AGENTBE_SCOPE=%q: env %v, exec %v; want both refused", scope, envErr, err)
		}
	}
	out, errOut, envErr, err := scopedRun(t, c, "users/link", "touch through-link")
	if envErr != nil || err == nil || !strings.Contains(errOut, "Scope path must") || out != "" {
		t.Errorf("scope through a link: %q %q %v %v", out, errOut, envErr, err)
	}
	if _, err := os.Stat(filepath.Join(root, "users/bob/through-link")); err == nil {
		t.Error("a command ran through the link")
	}
	// The prefix inside a channel scope is a working directory there.
	sub := filepath.Join(root, "users/alice/sub")
	out, _, _, err = scopedRun(t, c, "users/alice", `HOME='`+sub+`' cd "`+sub+`" && pwd`)
	if err != nil || out != sub+"\n" {
		t.Errorf("prefix inside the channel's scope: %q %v", out, err)
	}
	bob := filepath.Join(root, "users/bob")
	_, errOut, _, err = scopedRun(t, c, "users/alice", `HOME='`+bob+`' cd "`+bob+`" && pwd`)
	if err == nil || !strings.Contains(errOut, "outside the scope") {
		t.Errorf("prefix outside the channel's scope: %q %v", errOut, err)
	}
	// Without AGENTBE_SCOPE the directory must exist: it is not made.
	missing := filepath.Join(root, "users/carol")
	_, errOut, _, err = scopedRun(t, c, "-", `HOME='`+missing+`' cd "`+missing+`" && pwd`)
	if err == nil || !strings.Contains(errOut, "no such directory") {
		t.Errorf("prefix naming a missing directory: %q %v", errOut, err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("the prefix's directory was made")
	}

	// Under a static scope, AGENTBE_SCOPE is still relative to the root
	// and must lie inside the static scope.
	st := startDaemon(t, Config{Isolation: "none", ScopePath: "users/alice"})
	os.MkdirAll(filepath.Join(st.RootDir(), "users/alice/sub"), 0o755)
	cs := sshClient(t, st, "", "")
	if out, _, envErr, err := scopedRun(t, cs, "users/alice/sub", "pwd"); envErr != nil || err != nil ||
		strings.TrimSpace(out) != filepath.Join(st.RootDir(), "users/alice/sub") {
		t.Errorf("AGENTBE_SCOPE inside the static scope: %q %v %v", out, envErr, err)
	}
	if _, _, envErr, err := scopedRun(t, cs, "users/bob", "pwd"); envErr == nil || err == nil {
		t.Errorf("AGENTBE_SCOPE outside the static scope: %v %v", envErr, err)
	}
}

// TestSSHScopedShellAndSFTP: a shell (no pty) and the SFTP subsystem of a
// channel with AGENTBE_SCOPE work in the scope; SFTP is jailed there.
func TestSSHScopedShellAndSFTP(t *testing.T) {
	d := startDaemon(t, Config{Isolation: "none"})
	root := d.RootDir()
	os.MkdirAll(filepath.Join(root, "users/alice"), 0o755)
	os.MkdirAll(filepath.Join(root, "users/bob"), 0o755)
	os.WriteFile(filepath.Join(root, "users/bob/secret"), []byte("bob's"), 0o644)
	os.Symlink("../bob", filepath.Join(root, "users/alice/up"))
	c := sshClient(t, d, "", "")
	s, _ := c.NewSession()
	if err := s.Setenv("AGENTBE_SCOPE", "users/alice"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s.Stdout = &out
	s.Stdin = strings.NewReader("pwd\n")
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(); err != nil || strings.TrimSpace(out.String()) != filepath.Join(root, "users/alice") {
		t.Errorf("shell: %q %v", out.String(), err)
	}
	s.Close()

	s, _ = c.NewSession()
	defer s.Close()
	if err := s.Setenv("AGENTBE_SCOPE", "users/alice"); err != nil {
		t.Fatal(err)
	}
	w, _ := s.StdinPipe()
	r, _ := s.StdoutPipe()
	if err := s.RequestSubsystem("sftp"); err != nil {
		t.Fatal(err)
	}
	sc := sftpClientOn(t, r, w)
	ctx := context.Background()
	if names, err := sc.ReadDir(ctx, "/"); err != nil || len(names) != 1 || names[0].Name() != "up" {
		t.Errorf("SFTP root of the scope: %v %v", names, err)
	}
	if f, err := sc.Open(ctx, "up/secret"); err == nil {
		f.Close()
		t.Error("SFTP followed a link out of the scope")
	}
}

// sftpClientOn speaks SFTP over a session's stdout (r) and stdin (w).
func sftpClientOn(t *testing.T, r io.Reader, w io.WriteCloser) *sftpjail.Client {
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

// BenchmarkSSHExecScoped runs `true` through an SSH exec channel of the
// whole workspace, next to one scoped with AGENTBE_SCOPE (whose backend, a
// scope opened and its directory checked, is made for the channel): the
// difference is what confining a channel costs.
func BenchmarkSSHExecScoped(b *testing.B) {
	d := startDaemon(&testing.T{}, Config{RootDir: b.TempDir(), SSHHostKeyPath: benchKeyPath(b), Isolation: "software",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer d.stop()
	os.MkdirAll(filepath.Join(d.RootDir(), "users/alice"), 0o755)
	c := benchSSHClient(b, d)
	for _, scope := range []string{"", "users/alice"} {
		name := "root"
		if scope != "" {
			name = "scoped"
		}
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s, err := c.NewSession()
				if err != nil {
					b.Fatal(err)
				}
				if scope != "" {
					s.SendRequest("env", false, ssh.Marshal(struct{ Name, Value string }{"AGENTBE_SCOPE", scope}))
				}
				if err := s.Run("true"); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}

// FuzzChannelScope: whatever AGENTBE_SCOPE holds, an accepted value is a
// scope NormalizeScopePath keeps as it is (no "..", no empty or "."
// element), under the root the value named.
func FuzzChannelScope(f *testing.F) {
	s := &Server{rootDir: "/srv/ws"}
	for _, seed := range []string{"users/alice", "/srv/ws/users/alice", "/srv/ws", "/srv/wsx/a", "../x", "a//b", "/", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		scope, err := s.channelScope(v)
		if err != nil {
			return
		}
		if again, err := NormalizeScopePath(scope); err != nil || again != scope {
			t.Fatalf("%q: scope %q is not normalized (%q, %v)", v, scope, again, err)
		}
		for _, seg := range strings.Split(scope, "/") {
			if scope != "" && (seg == "" || seg == "." || seg == "..") {
				t.Fatalf("%q: scope %q has the element %q", v, scope, seg)
			}
		}
	})
}
