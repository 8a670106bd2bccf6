package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// daemonProc is a built agent-backend daemon running as a child process.
type daemonProc struct {
	cmd       *exec.Cmd
	port      int
	root      string
	tokenFile string
	bin       string
	stderr    *strings.Builder
	exited    chan struct{} // closed when the process has exited
	exitErr   error
}

var freePort = testenv.FreePort

// startDaemonBinary runs `agent-backend daemon` on 127.0.0.1 with a token
// file and waits for /health; it reports the time to the first 200.
func startDaemonBinary(t *testing.T, bin string, extra ...string) (*daemonProc, time.Duration) {
	t.Helper()
	dir := t.TempDir()
	d := &daemonProc{port: freePort(t), root: filepath.Join(dir, "ws"), tokenFile: filepath.Join(dir, "token"),
		bin: bin, stderr: &strings.Builder{}, exited: make(chan struct{})}
	os.WriteFile(d.tokenFile, []byte("s3cret-token-of-the-cli-tests-0123\n"), 0o600)
	args := append([]string{"daemon", "--rootDir", d.root, "--host", "127.0.0.1", "--port", strconv.Itoa(d.port),
		"--auth-token-file", d.tokenFile, "--ssh-host-key", filepath.Join(dir, "keys", "host_key"),
		"--isolation", "software"}, extra...)
	d.cmd = exec.Command(bin, args...)
	d.cmd.Env = append(os.Environ(), "AUTH_TOKEN=s3cret-token-of-the-cli-tests-0123")
	errPipe, _ := d.cmd.StderrPipe()
	start := time.Now()
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		b, _ := io.ReadAll(errPipe)
		d.stderr.WriteString(string(b))
		d.exitErr = d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		select {
		case <-d.exited:
		case <-time.After(10 * time.Second):
		}
	})
	return d, waitHealth(t, d.port, start)
}

// waitHealth polls /health of the daemon on 127.0.0.1:port until it
// answers 200 and returns the time since start; after 20 s it fails t.
func waitHealth(t testing.TB, port int, start time.Time) time.Duration {
	t.Helper()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/health"
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return time.Since(start)
			}
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("no /health: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}

func (d *daemonProc) mcp(t *testing.T, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://127.0.0.1:"+strconv.Itoa(d.port)+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer s3cret-token-of-the-cli-tests-0123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func rssKiB(pid int) int {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			n, _ := strconv.Atoi(strings.Fields(l)[1])
			return n
		}
	}
	return -1
}

// TestFullDaemonSignal runs the real binary: /health, MCP with the token
// from a file (the token is not in commands' environment), then SIGTERM
// while a WebSocket client is connected: the client gets 1000 "Server
// shutting down" and the daemon exits 0.
func TestFullDaemonSignal(t *testing.T) {
	bin := cliBinary(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		d, ready := startDaemonBinary(t, bin)
		t.Logf("%v: start to first /health 200: %v, idle RSS %d KiB", sig, ready, rssKiB(d.cmd.Process.Pid))
		status, body := d.mcp(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"command":"env"}}}`)
		if status != 200 || !strings.Contains(body, "PATH=") || strings.Contains(body, "s3cret") {
			t.Errorf("exec env: %d %s", status, body)
		}
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(d.port))
		if err != nil {
			t.Fatal(err)
		}
		br := upgrade(t, c, "/ssh?token=s3cret-token-of-the-cli-tests-0123")
		// The SSH server speaks first: its version line proves the
		// connection is served.
		if _, payload := readFrame(t, br); !strings.HasPrefix(string(payload), "SSH-2.0-") {
			t.Fatalf("first frame %q", payload)
		}
		d.cmd.Process.Signal(sig)
		op, payload := readFrame(t, br)
		if op != 8 || len(payload) < 2 || binary.BigEndian.Uint16(payload) != 1000 || string(payload[2:]) != "Server shutting down" {
			t.Errorf("close frame: op %d %q", op, payload)
		}
		c.Close()
		select {
		case <-d.exited:
			if d.exitErr != nil {
				t.Errorf("exit: %v\n%s", d.exitErr, d.stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Fatal("daemon still running 20 s after the signal")
		}
		if strings.Contains(d.stderr.String(), "s3cret") {
			t.Errorf("token in the daemon's log:\n%s", d.stderr.String())
		}
	}
}

// upgrade performs a WebSocket handshake on c by hand.
func upgrade(t *testing.T, c net.Conn, target string) *bufio.Reader {
	t.Helper()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: MDEyMzQ1Njc4OWFiY2RlZg==\r\nSec-WebSocket-Version: 13\r\n\r\n", target, c.RemoteAddr())
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	return br
}

// readFrame reads one unmasked server frame.
func readFrame(t *testing.T, br *bufio.Reader) (byte, []byte) {
	t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		t.Fatalf("frame: %v", err)
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		io.ReadFull(br, l[:])
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		io.ReadFull(br, l[:])
		n = binary.BigEndian.Uint64(l[:])
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(br, p); err != nil {
		t.Fatalf("frame payload: %v", err)
	}
	return h[0] & 0x0f, p
}

// openSSH runs an OpenSSH client (ssh or sftp) through `agent-backend
// ssh-proxy`, bounded in time.
func openSSH(t *testing.T, d *daemonProc, tool string, stdin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proxy := fmt.Sprintf("%s ssh-proxy --url ws://127.0.0.1:%d/ssh --token-file %s", d.bin, d.port, d.tokenFile)
	full := append([]string{"-F", "/dev/null", "-o", "ProxyCommand=" + proxy, "-o", "StrictHostKeyChecking=no",
		"-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR"}, args...)
	cmd := exec.CommandContext(ctx, "/usr/bin/"+tool, full...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s did not exit by itself: %s", tool, out)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// TestOpenSSHThroughProxy: the unmodified OpenSSH clients work through
// ssh-proxy: exec (exit status, binary output), a pty (tty prints a
// device), an sftp batch; each exits by itself.
func TestOpenSSHThroughProxy(t *testing.T) {
	bin := cliBinary(t)
	d, _ := startDaemonBinary(t, bin)
	out, code := openSSH(t, d, "ssh", "", "agent@daemon", "printf 'hi\\001'; exit 5")
	if code != 5 || out != "hi\x01" {
		t.Errorf("ssh exec: %d %q", code, out)
	}
	// A shell without a pty reads its commands from stdin.
	out, code = openSSH(t, d, "ssh", "echo from-shell\nexit 4\n", "-T", "agent@daemon")
	if code != 4 || out != "from-shell\n" {
		t.Errorf("ssh -T shell: %d %q", code, out)
	}
	out, code = openSSH(t, d, "ssh", "", "-tt", "agent@daemon", "tty")
	if code != 0 || !(strings.Contains(out, "/dev/pts/") || strings.Contains(out, "/dev/console")) {
		t.Errorf("ssh -tt tty: %d %q", code, out)
	}
	local := filepath.Join(t.TempDir(), "up.bin")
	data := make([]byte, 300<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	os.WriteFile(local, data, 0o644)
	back := filepath.Join(t.TempDir(), "back.bin")
	batch := "mkdir d\nput " + local + " d/up.bin\nls d\nget d/up.bin " + back + "\nrm d/up.bin\nrmdir d\n"
	out, code = openSSH(t, d, "sftp", batch, "-b", "-", "agent@daemon")
	if code != 0 {
		t.Errorf("sftp batch: %d %s", code, out)
	}
	if got, err := os.ReadFile(back); err != nil || string(got) != string(data) {
		t.Errorf("sftp round trip: %d bytes, %v", len(got), err)
	}
	if _, err := os.Stat(filepath.Join(d.root, "d")); err == nil {
		t.Error("sftp rmdir did not happen")
	}
	// A bad token: the client fails instead of hanging.
	os.WriteFile(d.tokenFile, []byte("wrong\n"), 0o600)
	if _, code := openSSH(t, d, "ssh", "", "agent@daemon", "true"); code == 0 {
		t.Error("ssh with a bad token succeeded")
	}
}

// TestConformanceDaemonHTTP replays the golden data over HTTP against the
// built binary in full daemon mode with a token (the README's command of
// the conformance pack): 0 mismatches, 0 workspace failures.
func TestConformanceDaemonHTTP(t *testing.T) {
	out, err := replayDaemonHTTP(t, conformancePack(t), "T0K-of-the-readme-command-test-0123")
	checkSummary(t, out, err)
}

// replayDaemonHTTP runs pack's capture script in compare mode over
// Streamable HTTP against the built binary in full daemon mode, started
// with token (the README's command of the conformance pack), and returns
// its output.
func replayDaemonHTTP(t *testing.T, pack, token string) (string, error) {
	t.Helper()
	_, interop := nodeSetup(t)
	bin := cliBinary(t)
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	base := t.TempDir()
	root := filepath.Join(base, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte(token+"\n"), 0o600)
	port := freePort(t)
	cmd := exec.Command(bin, "daemon", "--rootDir", root, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--auth-token-file", tokenFile, "--ssh-host-key", filepath.Join(t.TempDir(), "k"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "TZ=UTC", "HOME="+root)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	waitHealth(t, port, time.Now())
	return runNode(t, 5*time.Minute, interop, nil, filepath.Join(pack, "capture.mjs"),
		"--profile", "agentbe", "--compare", filepath.Join(pack, "golden.json"),
		"--http", "http://127.0.0.1:"+strconv.Itoa(port)+"/mcp", "--header", "Authorization:Bearer "+token, "--base", base)
}

// TestTokenLeavesArgvAndEnv: a daemon given its token on the command line
// and in the environment re-executes itself (same PID) without it: neither
// /proc/PID/cmdline nor /proc/PID/environ holds it, and it still
// authenticates.
func TestTokenLeavesArgvAndEnv(t *testing.T) {
	bin := cliBinary(t)
	const tok = "argv-token-4242-0123456789abcdefgh"
	port := freePort(t)
	root := t.TempDir()
	cmd := exec.Command(bin, "daemon", "--rootDir", root, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--auth-token", tok, "--isolation", "software", "--ssh-host-key", filepath.Join(t.TempDir(), "k"))
	cmd.Env = append(os.Environ(), "AUTH_TOKEN="+tok, "SOME_COPY="+tok)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	waitHealth(t, port, time.Now())
	pid := strconv.Itoa(cmd.Process.Pid)
	for _, f := range []string{"cmdline", "environ"} {
		b, err := os.ReadFile("/proc/" + pid + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), tok) {
			t.Errorf("/proc/%s/%s holds the token", pid, f)
		}
	}
	req, _ := http.NewRequest("POST", "http://127.0.0.1:"+strconv.Itoa(port)+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"command":"env"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Contains(string(b), tok) || !strings.Contains(string(b), "PATH=") {
		t.Errorf("mcp with the token: %d %s", resp.StatusCode, b)
	}
}

func TestStripSecretArgs(t *testing.T) {
	got, found := stripFlag([]string{"ab", "daemon", "--auth-token", "x", "--port", "1", "--auth-token=y"}, "--auth-token")
	if !found || strings.Join(got, " ") != "ab daemon --port 1" {
		t.Errorf("%v %v", got, found)
	}
	got, found = stripFlag([]string{"ab", "daemon", "--ssh-users", "a:b", "--ssh-users-file", "-"}, "--ssh-users")
	if !found || strings.Join(got, " ") != "ab daemon --ssh-users-file -" {
		t.Errorf("%v %v", got, found)
	}
	if _, found := stripFlag([]string{"ab", "daemon", "--port", "1"}, "--ssh-users"); found {
		t.Error("found a flag that is not there")
	}
	env, found := stripSecretEnv([]string{"A=1", "AUTH_TOKEN=t", "COPY=t", "SSH_USERS=a:b", "B=tt", "PW=pw", "E="}, "t", "pw", "")
	if !found || strings.Join(env, " ") != "A=1 B=tt E=" {
		t.Errorf("%v %v", env, found)
	}
	if v := flagValue([]string{"ab", "--ssh-users", "x", "--ssh-users=y", "--port", "1"}, "--ssh-users"); v != "y" {
		t.Errorf("flagValue: %q", v)
	}
}
