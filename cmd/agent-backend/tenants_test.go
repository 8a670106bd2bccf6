package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/wsnet"
	"github.com/agentbe/agent-backend/sftpjail"
	"golang.org/x/crypto/ssh"
)

// The tenants of the binary tests and their tokens.
const (
	aliceToken = "alice-token-of-the-tenant-tests-0123456789"
	bobToken   = "bob-token-of-the-tenant-tests-0123456789"
)

func tokenSum(tok string) string {
	s := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(s[:])
}

// tenantsFileJSON is a tenants file with alice (users/alice, limits
// aliceLimits) and, when withBob, bob (users/bob).
func tenantsFileJSON(aliceLimits string, withBob bool) string {
	doc := `{"tenants":[{"name":"alice","tokenSha256":"` + tokenSum(aliceToken) + `","scope":"users/alice","limits":` + aliceLimits + `}`
	if withBob {
		doc += `,{"name":"bob","tokenSha256":"` + tokenSum(bobToken) + `","scope":"users/bob"}`
	}
	return doc + `]}`
}

// tenantClient talks to a daemon binary as one principal.
type tenantClient struct {
	t    testing.TB
	port int
	tok  string
}

// do sends an HTTP request with the client's token and an optional
// X-Scope-Path.
func (c tenantClient) do(method, target, scope, body string) (int, http.Header, string) {
	c.t.Helper()
	req, _ := http.NewRequest(method, "http://127.0.0.1:"+strconv.Itoa(c.port)+target, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.tok)
	if scope != "" {
		req.Header.Set("X-Scope-Path", scope)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// tool calls an MCP tool and returns the status and body.
func (c tenantClient) tool(name, args string) (int, string) {
	c.t.Helper()
	st, _, body := c.do("POST", "/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":`+args+`}}`)
	return st, body
}

// sshConn connects an SSH client through /ssh with the client's token.
func (c tenantClient) sshConn(scope string) (*ssh.Client, error) {
	hdr := http.Header{"Authorization": {"Bearer " + c.tok}}
	if scope != "" {
		hdr.Set("X-Scope-Path", scope)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws, err := wsnet.Dial(ctx, "ws://127.0.0.1:"+strconv.Itoa(c.port)+"/ssh", wsnet.DialConfig{Header: hdr})
	if err != nil {
		return nil, err
	}
	conn, chans, reqs, err := ssh.NewClientConn(ws, "daemon", &ssh.ClientConfig{User: "agent",
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 20 * time.Second})
	if err != nil {
		ws.Close()
		return nil, err
	}
	cl := ssh.NewClient(conn, chans, reqs)
	c.t.Cleanup(func() { cl.Close() })
	return cl, nil
}

// sshRun runs cmd on a new session of cl and returns its output.
func sshRun(cl *ssh.Client, cmd string) (string, error) {
	s, err := cl.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	return string(out), err
}

// TestTenantsBinary runs the built daemon with two tenants. The hostile
// tenant alice tries every route to bob's files (and to a canary outside
// the workspace): MCP tools with relative, absolute and host paths and
// through links she makes pointing into bob's scope, /v1/fs, an ACP agent
// reaching out of its working directory, SSH exec and SFTP, and a forged
// X-Scope-Path. Then alice floods her own in-flight cap (429 with
// Retry-After) while bob is served, and SIGHUP removes bob: his token is
// refused everywhere while alice's live SSH connection goes on; a bad
// file on SIGHUP keeps the tenants.
func TestTenantsBinary(t *testing.T) {
	_, err := exec.LookPath("bwrap")
	need(t, err == nil, "bwrap")
	bin := cliBinary(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "ws")
	canary := "BOB-CANARY-" + rand.Text()
	outside := filepath.Join(dir, "outside")
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(canary), 0o644)
	bobDir := filepath.Join(root, "users", "bob")
	os.MkdirAll(bobDir, 0o755)
	os.WriteFile(filepath.Join(bobDir, "secret.txt"), []byte(canary), 0o644)
	tf := filepath.Join(dir, "tenants.json")
	os.WriteFile(tf, []byte(tenantsFileJSON(`{"mcpInFlight":2}`, true)), 0o600)
	// An ACP agent that reaches out of its working directory by every
	// path it could know, writes what it saw into its own directory, and
	// then echoes messages.
	snoop := "snoop=exec sh -c 'for p in ../bob/secret.txt " + bobDir + "/secret.txt /tmp/agentbe-workspace/../bob/secret.txt " +
		outside + "/secret.txt bobdir/secret.txt; do cat $p; done > snoop.txt 2>&1; cd " + bobDir + " >> snoop.txt 2>&1 && cat secret.txt >> snoop.txt; echo done >> snoop.txt; exec cat'"
	d := startTenantsDaemon(t, bin, root, "--tenants", tf, "--acp-agent", snoop)
	alice := tenantClient{t, d.port, aliceToken}
	bob := tenantClient{t, d.port, bobToken}
	noCanary := func(what, s string) {
		t.Helper()
		if strings.Contains(s, canary) {
			t.Errorf("%s: alice saw bob's canary: %s", what, s)
		}
	}

	// Alice works in her scope, and makes links into bob's scope.
	if st, body := alice.tool("write_file", `{"path":"a.txt","content":"alice"}`); st != 200 || strings.Contains(body, `"isError":true`) {
		t.Fatalf("alice write: %d %s", st, body)
	}
	if b, err := os.ReadFile(filepath.Join(root, "users/alice/a.txt")); err != nil || string(b) != "alice" {
		t.Fatalf("alice's file: %q %v", b, err)
	}
	// (The dangerous-command check refuses "ln -s ../" on a command line,
	// a heuristic a hostile tenant gets round with a script: the boundary
	// must hold without it.)
	alice.tool("write_file", `{"path":"mklinks.sh","content":"ln -s ../bob bobdir; ln -s `+bobDir+` hostlink; ln -s `+outside+` outlink\n"}`)
	st, body := alice.tool("exec", `{"command":"sh mklinks.sh; ls /tmp/agentbe-workspace"}`)
	if st != 200 || strings.Contains(body, "users") || !strings.Contains(body, "a.txt") {
		t.Errorf("alice's ls of the workspace: %d %s", st, body)
	}
	if fi, err := os.Lstat(filepath.Join(root, "users/alice/bobdir")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("alice's link was not made: %v", err)
	}

	// MCP tools.
	for _, p := range []string{"../bob/secret.txt", "/users/bob/secret.txt", bobDir + "/secret.txt", "bobdir/secret.txt",
		"hostlink/secret.txt", "outlink/secret.txt", outside + "/secret.txt"} {
		_, body := alice.tool("read_text_file", `{"path":"`+p+`"}`)
		noCanary("read_text_file "+p, body)
		_, body = alice.tool("list_directory", `{"path":"`+strings.TrimSuffix(p, "/secret.txt")+`"}`)
		if strings.Contains(body, "secret.txt") {
			t.Errorf("list_directory %s lists bob's files: %s", p, body)
		}
		alice.tool("write_file", `{"path":"`+strings.TrimSuffix(p, "secret.txt")+`owned.txt","content":"x"}`)
	}
	_, body = alice.tool("exec", `{"command":"cat ../bob/secret.txt `+bobDir+`/secret.txt bobdir/secret.txt hostlink/secret.txt outlink/secret.txt; `+
		`echo x > ../bob/owned2.txt; echo x > bobdir/owned3.txt; echo x > `+bobDir+`/owned4.txt"}`)
	noCanary("exec cat", body)

	// /v1/fs.
	for _, p := range []string{"../bob/secret.txt", "bobdir/secret.txt", "hostlink/secret.txt", bobDir + "/secret.txt", "outlink/secret.txt"} {
		_, _, body := alice.do("GET", "/v1/fs/file?path="+p, "", "")
		noCanary("/v1/fs/file "+p, body)
		_, _, body = alice.do("GET", "/v1/fs/entries?path="+strings.TrimSuffix(p, "/secret.txt"), "", "")
		if strings.Contains(body, "secret.txt") {
			t.Errorf("/v1/fs/entries %s lists bob's files: %s", p, body)
		}
		alice.do("PUT", "/v1/fs/file?path="+strings.TrimSuffix(p, "secret.txt")+"owned5.txt", "", "x")
	}

	// A forged X-Scope-Path: 403 everywhere.
	if st, _, body := alice.do("POST", "/mcp", "users/bob", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"secret.txt"}}}`); st != 403 ||
		!strings.Contains(body, `"error":"Forbidden"`) {
		t.Errorf("/mcp X-Scope-Path users/bob: %d %s", st, body)
	}
	if st, hdr, body := alice.do("GET", "/v1/fs/file?path=secret.txt", "users/bob", ""); st != 403 || hdr.Get("Content-Type") != "application/problem+json" {
		t.Errorf("/v1 X-Scope-Path users/bob: %d %s", st, body)
	}
	if st, _, body := alice.do("POST", "/v1/acp/x?agent=snoop", "users/bob", `{"jsonrpc":"2.0","method":"ping"}`); st != 403 {
		t.Errorf("ACP X-Scope-Path users/bob: %d %s", st, body)
	}
	if _, err := alice.sshConn("users/bob"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("/ssh X-Scope-Path users/bob: %v", err)
	}

	// An X-Scope-Path inside alice's scope that is her link into bob's:
	// refused, as every scope reached through a link.
	for _, scope := range []string{"users/alice/bobdir", "users/alice/hostlink"} {
		if st, _, body := alice.do("POST", "/mcp", scope, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"secret.txt"}}}`); st != 400 {
			t.Errorf("/mcp X-Scope-Path %s: %d %s", scope, st, body)
		}
		_, _, body := alice.do("GET", "/v1/fs/file?path=secret.txt", scope, "")
		noCanary("/v1 X-Scope-Path "+scope, body)
		if cl, err := alice.sshConn(scope); err == nil {
			out, _ := sshRun(cl, "cat secret.txt")
			noCanary("ssh X-Scope-Path "+scope, out)
		}
	}

	// ACP: the agent starts in alice's scope, told a working directory in
	// bob's.
	if st, _, body := alice.do("POST", "/v1/acp/s1?agent=snoop", "", `{"jsonrpc":"2.0","method":"session/new","params":{"cwd":"`+bobDir+`","mcpServers":[]}}`); st != 202 {
		t.Errorf("ACP start: %d %s", st, body)
	} else {
		var got []byte
		deadline := time.Now().Add(20 * time.Second)
		for !bytes.Contains(got, []byte("done")) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			got, _ = os.ReadFile(filepath.Join(root, "users/alice/snoop.txt"))
		}
		if !bytes.Contains(got, []byte("done")) {
			t.Errorf("the snooping agent did not run: %q", got)
		}
		noCanary("ACP agent", string(got))
	}

	// SSH: exec and SFTP of alice's connection.
	if cl, err := alice.sshConn(""); err != nil {
		t.Errorf("alice's /ssh: %v", err)
	} else {
		out, _ := sshRun(cl, "cat ../bob/secret.txt "+bobDir+"/secret.txt bobdir/secret.txt")
		noCanary("ssh exec", out)
		// The TypeScript client's working-directory prefix, aimed at bob.
		for _, dir := range []string{bobDir, "../bob", root + "/users/bob", "/tmp/agentbe-workspace/../bob"} {
			out, _ := sshRun(cl, "HOME='"+dir+"' cd \""+dir+"\" && cat secret.txt; echo x > owned6.txt")
			noCanary("ssh exec in "+dir, out)
		}
		if out, _ = sshRun(cl, "ls /tmp/agentbe-workspace"); !strings.Contains(out, "a.txt") || strings.Contains(out, "users") {
			t.Errorf("ssh ls of the workspace: %s", out)
		}
		s, err := cl.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		w, _ := s.StdinPipe()
		r, _ := s.StdoutPipe()
		if err := s.RequestSubsystem("sftp"); err != nil {
			t.Fatal(err)
		}
		sc, err := sftpjail.NewClient(struct {
			io.Reader
			io.WriteCloser
		}{r, w})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"../bob/secret.txt", "/users/bob/secret.txt", "bobdir/secret.txt", "hostlink/secret.txt", bobDir + "/secret.txt"} {
			if f, err := sc.Open(context.Background(), p); err == nil {
				b, _ := io.ReadAll(f)
				f.Close()
				noCanary("sftp "+p, string(b))
			}
		}
		sc.Close()
		s.Close()
	}
	ents, _ := os.ReadDir(bobDir)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("alice wrote into bob's scope: %v", names)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("alice wrote outside the workspace: %d entries", len(ents))
	}

	// Flood: alice holds her 2 in-flight requests; 6 more get 429 with
	// Retry-After; bob is served meanwhile.
	gate := filepath.Join(root, "users/alice/gate")
	os.WriteFile(gate, nil, 0o644)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			alice.tool("exec", `{"command":"touch started`+strconv.Itoa(i)+`; while [ -e gate ]; do sleep 0.05; done"}`)
		}()
	}
	for i := range 2 {
		waitFile(t, filepath.Join(root, "users/alice/started"+strconv.Itoa(i)))
	}
	var mu sync.Mutex
	refused := 0
	var flood sync.WaitGroup
	for range 6 {
		flood.Add(1)
		go func() {
			defer flood.Done()
			st, hdr, _ := alice.do("POST", "/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			if st == 429 && hdr.Get("Retry-After") != "" {
				mu.Lock()
				refused++
				mu.Unlock()
			}
		}()
	}
	if st, body := bob.tool("read_text_file", `{"path":"secret.txt"}`); st != 200 || !strings.Contains(body, canary) {
		t.Errorf("bob while alice floods: %d %s", st, body)
	}
	flood.Wait()
	if refused != 6 {
		t.Errorf("alice's flood beyond her cap: %d of 6 refused with 429", refused)
	}
	os.Remove(gate)
	wg.Wait()

	// SIGHUP removes bob: his new requests, ACP messages and SSH
	// connections are refused; alice's live connection goes on.
	aliceSSH, err := alice.sshConn("")
	if err != nil {
		t.Fatal(err)
	}
	bobSSH, err := bob.sshConn("")
	if err != nil {
		t.Fatal(err)
	}
	if st, _, body := bob.do("POST", "/v1/acp/b1?agent=snoop", "", `{"jsonrpc":"2.0","method":"ping"}`); st != 202 {
		t.Fatalf("bob's ACP start: %d %s", st, body)
	}
	os.WriteFile(tf, []byte(tenantsFileJSON(`{"mcpInFlight":2}`, false)), 0o600)
	d.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, _ := bob.tool("list_directory", `{"path":"."}`)
		if st == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob still gets %d after SIGHUP", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st, _, _ := bob.do("GET", "/v1/fs/entries?path=.", "", ""); st != 401 {
		t.Errorf("removed bob on /v1: %d", st)
	}
	if st, _, _ := bob.do("POST", "/v1/acp/b1", "", `{"jsonrpc":"2.0","method":"ping"}`); st != 401 {
		t.Errorf("removed bob's ACP message: %d", st)
	}
	if _, err := bob.sshConn(""); err == nil {
		t.Error("removed bob opened an SSH connection")
	}
	if _, err := bobSSH.NewSession(); err == nil {
		t.Error("removed bob's live connection opened a channel")
	}
	if out, err := sshRun(aliceSSH, "echo alive"); err != nil || !strings.Contains(out, "alive") {
		t.Errorf("alice's live connection after SIGHUP: %q %v", out, err)
	}
	// A bad file: an ERROR is logged and the tenants stay.
	os.WriteFile(tf, []byte(`{"tenants":[{"name":"alice","limits":{"memoryByte":1}}]}`), 0o600)
	d.cmd.Process.Signal(syscall.SIGHUP)
	deadline = time.Now().Add(20 * time.Second)
	for !strings.Contains(d.stderrSoFar(), "tenants file not reloaded") {
		if time.Now().After(deadline) {
			t.Fatal("no ERROR for a bad tenants file")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st, body := alice.tool("list_directory", `{"path":"."}`); st != 200 {
		t.Errorf("alice after a bad reload: %d %s", st, body)
	}
}

// tenantsDaemon is a daemon binary whose stderr can be read while it runs.
type tenantsDaemon struct {
	cmd  *exec.Cmd
	port int
	mu   sync.Mutex
	errb bytes.Buffer
}

func (d *tenantsDaemon) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.errb.Write(p)
}

func (d *tenantsDaemon) stderrSoFar() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.errb.String()
}

// startTenantsDaemon runs `agent-backend daemon` on root with bwrap
// isolation, no operator token and extra flags, and waits for /health.
func startTenantsDaemon(t testing.TB, bin, root string, extra ...string) *tenantsDaemon {
	t.Helper()
	d := &tenantsDaemon{port: freePort(t)}
	args := append([]string{"daemon", "--rootDir", root, "--host", "127.0.0.1", "--port", strconv.Itoa(d.port),
		"--ssh-host-key", filepath.Join(t.TempDir(), "host_key"), "--isolation", "bwrap"}, extra...)
	d.cmd = exec.Command(bin, args...)
	d.cmd.Stderr = d
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { d.cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	})
	waitHealth(t, d.port, time.Now())
	return d
}

// waitFile waits up to 20 s for p to exist.
func waitFile(t *testing.T, p string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(p); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", p)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTenantsBinaryRefused: the daemon exits 1 with the reason for a
// tenants file it cannot use, for tenants without bwrap isolation, and for
// --tenants with --scopePath.
func TestTenantsBinaryRefused(t *testing.T) {
	bin := cliBinary(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(tenantsFileJSON(`{}`, true)), 0o600)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"tenants":[{"name":"a","tokenSha256":"`+tokenSum("x")+`","scope":"s","limits":{"sshConn":1}}]}`), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tenants", bad, "--isolation", "bwrap"}, `unknown field "sshConn"`},
		{[]string{"--tenants", filepath.Join(dir, "missing.json"), "--isolation", "bwrap"}, "invalid tenants file"},
		{[]string{"--tenants", good, "--isolation", "software"}, "tenants require bwrap isolation"},
		{[]string{"--tenants", good, "--scopePath", "users"}, "--tenants and --scopePath are mutually exclusive"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		args := append([]string{"daemon", "--rootDir", filepath.Join(dir, "ws"), "--host", "127.0.0.1",
			"--port", strconv.Itoa(freePort(t)), "--ssh-host-key", filepath.Join(dir, "key")}, c.args...)
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		cancel()
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != 1 || !strings.Contains(string(out), c.want) {
			t.Errorf("%v: exit %d (%v) %s, want 1 and %q", c.args, code, err, out, c.want)
		}
	}
}
