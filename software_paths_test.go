package agentbe

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSoftwarePaths(t *testing.T) {
	const ws = "/srv/ws/users/alice"
	refused := []string{
		"cat /etc/shadow",
		"cat /srv/ws/users/bob/secret",
		"cp /outside/secret .",
		"cat '/etc/shadow'",
		`cat "/etc"/shadow`,
		`cat /e''tc/shadow`,
		`cat $'\x2fetc/shadow'`,
		`cat $(printf '\057etc/shadow')`,
		"X=/etc; cat $X/shadow",
		"tool --file=/etc/shadow",
		"cat </etc/shadow",
		"echo x>/tmp/drop",
		"cat {/etc/shadow,}",
		"ls /",
		"cat /usr/bin/../../etc/shadow",
		"cat /srv/ws/users/alice/../bob/x",
		"cat ~root/.ssh/id_rsa",
		"PATH=/opt/evil:$PATH ls",
		"find / -name x",
	}
	allowed := []string{
		"ls -la",
		"cat a/b/c.txt",
		"/usr/bin/env python3 -V",
		"/bin/ls > /dev/null 2>/dev/stderr",
		"cat /srv/ws/users/alice/notes.txt",
		"ls /srv/ws/users/alice",
		"curl -s https://example.com/a/b",
		"git clone git@host:org/repo.git",
		"grep -E '^/api/' routes.txt",
		"sed 's/a/b/g' f",
		"awk -F/ '{print $2}' f",
		"cat ~/notes.txt",
		"echo $HOME/x",
		"date +%Y/%m/%d",
		"cat /dev/fd/0",
	}
	for _, c := range refused {
		if err := checkSoftwarePaths(c, ws); err == nil {
			t.Errorf("refused %q: allowed", c)
		} else if !strings.Contains(err.Error(), "software isolation") {
			t.Errorf("%q: unclear error %v", c, err)
		}
	}
	for _, c := range allowed {
		if err := checkSoftwarePaths(c, ws); err != nil {
			t.Errorf("allowed %q: %v", c, err)
		}
	}
}

func FuzzCheckSoftwarePaths(f *testing.F) {
	for _, s := range []string{"cat /etc/x", `$'\x2f'`, "a=/b", `\u002f`, "~x", "http://h/p", `\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		err := checkSoftwarePaths(cmd, "/w")
		// A command naming an absolute path outright is never allowed.
		if err == nil && strings.Contains(" "+cmd, " /etc/") && !strings.ContainsAny(cmd, `\'"`) {
			t.Fatalf("%q allowed", cmd)
		}
	})
}

// TestSoftwareExecRefusesOutsidePaths: through Exec, with the real host
// path of a canary outside the workspace; the workspace's own absolute
// paths work. AllowDangerous turns the heuristic off, as it does the
// command check; none mode never applies it.
func TestSoftwareExecRefusesOutsidePaths(t *testing.T) {
	ctx := context.Background()
	canary := t.TempDir()
	secret := filepath.Join(canary, "secret")
	mustOK(t, os.WriteFile(secret, []byte("s3cret"), 0o600))
	l := newIsoLocal(t, "", IsolationSoftware, true)
	for _, cmd := range []string{"cat " + secret, "cp " + secret + " .", "cat /etc/passwd"} {
		out, err := l.Exec(ctx, cmd, ExecOptions{})
		if CodeOf(err) != CodeDangerousOperation || strings.Contains(string(out), "s3cret") {
			t.Errorf("%q: %q, %v", cmd, out, err)
		}
	}
	if _, err := os.Stat(filepath.Join(l.RootDir(), "secret")); err == nil {
		t.Error("secret copied into the workspace")
	}
	mustOK(t, l.Write(ctx, "in.txt", []byte("mine")))
	host := l.jailHost(t)
	if out := isoExec(t, l, "cat "+filepath.Join(host, "in.txt"), ExecOptions{}); out != "mine" {
		t.Errorf("workspace path refused: %q", out)
	}
	scope, err := l.Scope("users/alice", ScopeOptions{})
	mustOK(t, err)
	mustOK(t, l.Write(ctx, "users/bob/b.txt", []byte("bob")))
	if _, err := scope.Exec(ctx, "cat "+filepath.Join(host, "users/bob/b.txt"), ExecOptions{}); CodeOf(err) != CodeDangerousOperation {
		t.Errorf("scope read a sibling by absolute path: %v", err)
	}
	none := newIsoLocal(t, "", IsolationNone, true)
	if out := isoExec(t, none, "cat "+secret, ExecOptions{}); out != "s3cret" {
		t.Errorf("none mode: %q", out)
	}
}

// TestAutoFallbackIsLoud: auto falling back to software warns once, naming
// what is and is not confined; choosing bwrap is an Info line.
func TestAutoFallbackIsLoud(t *testing.T) {
	var buf bytes.Buffer
	lg := slog.New(slog.NewTextHandler(&buf, nil))
	logAutoChoice(lg, IsolationSoftware, "bwrap not found in PATH")
	out := buf.String()
	for _, want := range []string{"level=WARN", "isolation=software", "bwrap not found", "unsandboxed", "file tools stay jailed"} {
		if !strings.Contains(out, want) {
			t.Errorf("warning lacks %q: %s", want, out)
		}
	}
	buf.Reset()
	logAutoChoice(lg, IsolationBwrap, "probe ok")
	if !strings.Contains(buf.String(), "level=INFO") {
		t.Errorf("bwrap choice: %s", buf.String())
	}
}
