package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"golang.org/x/crypto/ssh"
	"golang.org/x/net/websocket"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// dialWS opens a WebSocket to /ssh (query appended to the path) with the
// given Authorization header ("" for none), as a net.Conn carrying binary
// frames.
func dialWS(t *testing.T, d *testDaemon, query, auth string) *websocket.Conn {
	t.Helper()
	cfg, err := websocket.NewConfig("ws://"+d.addr+"/ssh"+query, "http://"+d.addr)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		cfg.Header = http.Header{"Authorization": {auth}}
	}
	ws, err := websocket.DialConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ws.PayloadType = websocket.BinaryFrame
	return ws
}

// sshClient connects an SSH client through /ssh.
func sshClient(t *testing.T, d *testDaemon, query, auth string) *ssh.Client {
	t.Helper()
	ws := dialWS(t, d, query, auth)
	conn, chans, reqs, err := ssh.NewClientConn(ws, "daemon", &ssh.ClientConfig{
		User: "agent", Auth: []ssh.AuthMethod{ssh.Password("anything")},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := ssh.NewClient(conn, chans, reqs)
	t.Cleanup(func() { c.Close() })
	return c
}

// rawClose performs the upgrade by hand and returns the close frame's code
// and reason (the WebSocket library hides them).
func rawClose(t *testing.T, addr, target string, hdr ...string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	req := "GET " + target + " HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n"
	for i := 0; i+1 < len(hdr); i += 2 {
		req += hdr[i] + ": " + hdr[i+1] + "\r\n"
	}
	io.WriteString(c, req+"\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 {
		t.Fatalf("upgrade: %d", resp.StatusCode)
	}
	for {
		var h [2]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			t.Fatalf("no close frame: %v", err)
		}
		n := int(h[1] & 0x7f)
		if n == 126 {
			var l [2]byte
			io.ReadFull(br, l[:])
			n = int(binary.BigEndian.Uint16(l[:]))
		}
		payload := make([]byte, n)
		io.ReadFull(br, payload)
		if h[0]&0x0f == 8 {
			if n < 2 {
				return 0, ""
			}
			return int(binary.BigEndian.Uint16(payload)), string(payload[2:])
		}
	}
}

func TestSSHWSAuth(t *testing.T) {
	d := startDaemon(t, Config{AuthToken: "tk-7f3a"})
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer nope"}, {"Authorization", "tk-7f3a"}} {
		code, reason := rawClose(t, d.addr, "/ssh", hdr...)
		if code != 4001 || reason != "Unauthorized" {
			t.Errorf("%v: close %d %q", hdr, code, reason)
		}
	}
	if code, reason := rawClose(t, d.addr, "/ssh?token=bad"); code != 4001 || reason != "Unauthorized" {
		t.Errorf("bad query token: %d %q", code, reason)
	}
	for _, c := range []struct{ query, auth string }{{"?token=tk-7f3a", ""}, {"", "Bearer tk-7f3a"}, {"?token=bad", "Bearer tk-7f3a"}} {
		cl := sshClient(t, d, c.query, c.auth)
		out, err := runSSH(t, cl, "echo ok", "")
		if err != nil || out != "ok\n" {
			t.Errorf("%+v: %q %v", c, out, err)
		}
	}
	// The token never reaches the log (nor do the wrong ones presented).
	if log := d.log.String(); strings.Contains(log, "tk-7f3a") || strings.Contains(log, "nope") || strings.Contains(log, "=bad") {
		t.Errorf("token in the log: %s", d.log.String())
	}
}

func TestSSHWSDisabledAndOrigin(t *testing.T) {
	d := startDaemon(t, Config{DisableSSHWS: true})
	resp, err := http.Get(d.url + "/ssh")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("disabled /ssh: %d", resp.StatusCode)
	}
	open := startDaemon(t, Config{})
	cfg, _ := websocket.NewConfig("ws://"+open.addr+"/ssh", "http://evil.example")
	if _, err := websocket.DialConfig(cfg); err == nil {
		t.Error("cross-origin WebSocket accepted without a token")
	}
}

// runSSH runs cmd in a session and returns stdout; stderr is appended to
// the error on failure.
func runSSH(t *testing.T, c *ssh.Client, cmd, stdin string) (string, error) {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out, errb bytes.Buffer
	s.Stdout, s.Stderr = &out, &errb
	s.Stdin = strings.NewReader(stdin)
	err = s.Run(cmd)
	if err != nil {
		return out.String(), fmt.Errorf("%w: %s", err, errb.String())
	}
	return out.String(), nil
}

func TestSSHExec(t *testing.T) {
	d := startDaemon(t, Config{})
	c := sshClient(t, d, "", "")
	os.MkdirAll(filepath.Join(d.RootDir(), "sub dir"), 0o755)
	os.WriteFile(filepath.Join(d.RootDir(), "sub dir", "marker"), []byte("in-sub"), 0o644)

	s, _ := c.NewSession()
	var out, errb bytes.Buffer
	s.Stdout, s.Stderr = &out, &errb
	err := s.Run("echo out; echo err >&2; exit 3")
	s.Close()
	if ee, ok := err.(*ssh.ExitError); !ok || ee.ExitStatus() != 3 || out.String() != "out\n" || errb.String() != "err\n" {
		t.Errorf("exit 3: %v %q %q", err, out.String(), errb.String())
	}

	// Binary-safe output, stdin, HOME/PWD/TERM.
	got, err := runSSH(t, c, `printf '\000\001\377\n\r'`, "")
	if err != nil || got != "\x00\x01\xff\n\r" {
		t.Errorf("binary: %q %v", got, err)
	}
	got, err = runSSH(t, c, "cat", "line1\nline2\x00\xff")
	if err != nil || got != "line1\nline2\x00\xff" {
		t.Errorf("stdin: %q %v", got, err)
	}
	got, err = runSSH(t, c, `printenv HOME; pwd; echo "$TERM"`, "")
	if l := strings.Split(got, "\n"); err != nil || len(l) != 4 || l[0] != l[1] || l[2] != "xterm-256color" {
		t.Errorf("env: %q %v", got, err)
	}

	// The TypeScript client's prefix: dir, variables, HOME usable.
	cmd := `HOME='` + d.RootDir() + `/sub dir' FOO='it'\''s' cd "` + d.RootDir() + `/sub dir" && cat marker && printf ' %s\n' "$FOO" && printenv HOME && pwd && ls`
	got, err = runSSH(t, c, cmd, "")
	// The directory is the command's boundary: under bwrap it is all there
	// is at the workspace path.
	if l := strings.Split(got, "\n"); err != nil || len(l) != 5 || l[0] != "in-sub it's" || l[1] != l[2] ||
		!strings.HasSuffix(l[2], "/sub dir") && l[2] != "/tmp/agentbe-workspace" || l[3] != "marker" {
		t.Errorf("ts prefix: %q %v", got, err)
	}
	// Its directory must stay inside the workspace.
	canary := t.TempDir()
	_, err = runSSH(t, c, `HOME='`+canary+`' cd "`+canary+`/../`+filepath.Base(canary)+`" && pwd`, "")
	if err == nil {
		t.Error("cd outside the workspace accepted")
	}

	// Dangerous commands are refused with status 1, also after the prefix.
	os.WriteFile(filepath.Join(d.RootDir(), "canary"), nil, 0o644)
	for _, cmd := range []string{"sudo rm canary", `HOME='x' cd "` + d.RootDir() + `" && sudo rm canary`} {
		_, err = runSSH(t, c, cmd, "")
		var ee *ssh.ExitError
		if !errors.As(err, &ee) || ee.ExitStatus() != 1 || !strings.Contains(err.Error(), "sudo") {
			t.Errorf("%s: %v", cmd, err)
		}
	}
	if _, err := os.Stat(filepath.Join(d.RootDir(), "canary")); err != nil {
		t.Error("canary removed")
	}
}

func TestSSHKeepaliveAndChannelCap(t *testing.T) {
	d := startDaemon(t, Config{MaxChannelsPerConn: 2})
	c := sshClient(t, d, "", "")
	ok, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
	if err != nil || !ok {
		t.Errorf("keepalive: %v %v", ok, err)
	}
	s1, err1 := c.NewSession()
	s2, err2 := c.NewSession()
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	_, err = c.NewSession()
	if oce, ok := err.(*ssh.OpenChannelError); !ok || oce.Reason != ssh.ResourceShortage {
		t.Errorf("third channel: %v", err)
	}
	if _, _, err := c.OpenChannel("direct-tcpip", nil); err == nil {
		t.Error("direct-tcpip accepted")
	}
	s1.Close()
	s2.Close()
}

// waitNoProcess polls until no process has marker in its command line.
func waitNoProcess(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if !processRunning(marker) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("a process %q is still running", marker)
}

func waitProcess(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if processRunning(marker) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %q never started", marker)
}

// processRunning reports whether a process carrying marker (a
// testenv.SleepMarker the test put in its argv) is alive.
func processRunning(marker string) bool { return len(testenv.ProcessesWith(marker)) > 0 }

func TestSSHDisconnectKillsAndSignal(t *testing.T) {
	d := startDaemon(t, Config{})
	c := sshClient(t, d, "", "")
	s, _ := c.NewSession()
	m1, m2 := testenv.SleepMarker(), testenv.SleepMarker()
	if err := s.Start("exec sleep " + m1); err != nil {
		t.Fatal(err)
	}
	waitProcess(t, m1)
	c.Close()
	waitNoProcess(t, m1)

	c = sshClient(t, d, "", "")
	s, _ = c.NewSession()
	if err := s.Start("exec sleep " + m2); err != nil {
		t.Fatal(err)
	}
	waitProcess(t, m2)
	s.Signal(ssh.SIGTERM)
	err := s.Wait()
	if ee, ok := err.(*ssh.ExitError); !ok || ee.Signal() != "TERM" {
		t.Errorf("after signal: %v", err)
	}
	waitNoProcess(t, m2)
}

func TestSSHSFTP(t *testing.T) {
	d := startDaemon(t, Config{ScopePath: "tenant"})
	cl := sftpSession(t, sshClient(t, d, "", ""))
	defer cl.Close()
	ctx := context.Background()
	f, err := cl.Create(ctx, "/dir/hello.bin")
	if err != nil {
		t.Fatal(err)
	}
	data := []byte{0, 1, 2, 255, '\n'}
	f.Write(data)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(d.RootDir(), "tenant", "dir", "hello.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("file: %q %v", got, err)
	}
	os.WriteFile(filepath.Join(d.RootDir(), "secret"), []byte("outside the scope"), 0o644)
	if _, err := cl.Stat(ctx, "../secret"); err == nil {
		t.Error("../secret reachable from the scope")
	}
	if rp, err := cl.RealPath(ctx, "dir"); err != nil || rp != "/dir" {
		t.Errorf("realpath: %q %v", rp, err)
	}
}

func TestSSHUnknownSubsystemAndDoubleStart(t *testing.T) {
	d := startDaemon(t, Config{})
	c := sshClient(t, d, "", "")
	s, _ := c.NewSession()
	if err := s.RequestSubsystem("nope"); err == nil {
		t.Error("unknown subsystem accepted")
	}
	s.Close()
}

func TestSSHPTYShell(t *testing.T) {
	for _, iso := range []string{"none", "software", "bwrap"} {
		t.Run(iso, func(t *testing.T) { testPTYShell(t, iso) })
	}
}

// TestSSHPTYHangup: the client going away ends an interactive shell and
// the foreground job it runs.
func TestSSHPTYHangup(t *testing.T) {
	for _, iso := range []string{"none", "bwrap"} {
		t.Run(iso, func(t *testing.T) {
			d := startDaemon(t, Config{Isolation: agentbe.Isolation(iso)})
			c := sshClient(t, d, "", "")
			_, in := ptyShell(t, c, 24, 80, nil)
			marker := testenv.SleepMarker()
			io.WriteString(in, "sleep "+marker+"\n")
			waitProcess(t, marker)
			c.Close()
			waitNoProcess(t, marker)
		})
	}
}

// TestSSHPTYInterrupt: ^C typed on the pty interrupts the foreground job
// and the shell carries on.
func TestSSHPTYInterrupt(t *testing.T) {
	for _, iso := range []string{"none", "bwrap"} {
		t.Run(iso, func(t *testing.T) {
			d := startDaemon(t, Config{Isolation: agentbe.Isolation(iso)})
			s, in := ptyShell(t, sshClient(t, d, "", ""), 24, 80, nil)
			defer s.Close()
			marker := testenv.SleepMarker()
			io.WriteString(in, "sleep "+marker+"\n")
			waitProcess(t, marker)
			io.WriteString(in, "\x03")
			waitNoProcess(t, marker)
			io.WriteString(in, "exit 3\n")
			if err := s.Wait(); err == nil || !strings.Contains(err.Error(), "status 3") {
				t.Errorf("exit: %v", err)
			}
		})
	}
}

// ptyShell requests an xterm pty of rows×cols in a new session of c and
// starts an interactive shell on it; out, if not nil, receives what the
// shell prints. It returns the session and the shell's input.
func ptyShell(t *testing.T, c *ssh.Client, rows, cols int, out io.Writer) (*ssh.Session, io.WriteCloser) {
	t.Helper()
	s, _ := c.NewSession()
	if err := s.RequestPty("xterm", rows, cols, ssh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	in, _ := s.StdinPipe()
	s.Stdout = out
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	return s, in
}

// ttyLine matches what tty(1) prints for a terminal (bwrap shows the pty
// as /dev/console inside its own /dev).
var ttyLine = regexp.MustCompile(`(/dev/pts/[0-9]+|/dev/console)\r?\n`)

func testPTYShell(t *testing.T, iso string) {
	d := startDaemon(t, Config{Isolation: agentbe.Isolation(iso)})
	var out bytes.Buffer
	s, in := ptyShell(t, sshClient(t, d, "", ""), 40, 100, &out)
	defer s.Close()
	if err := s.WindowChange(50, 120); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, "tty; stty size; echo TERM=$TERM; sleep 0.2 & jobs; wait; exit 7\n")
	err := s.Wait()
	if ee, ok := err.(*ssh.ExitError); !ok || ee.ExitStatus() != 7 {
		t.Errorf("exit: %v\n%s", err, out.String())
	}
	o := out.String()
	if strings.Contains(o, "no job control") || !strings.Contains(o, "Running") {
		t.Errorf("no job control (the pty is not the controlling terminal):\n%s", o)
	}
	if !ttyLine.MatchString(o) || !strings.Contains(o, "50 120") || !strings.Contains(o, "TERM=xterm") {
		t.Errorf("pty output:\n%s", o)
	}
}

func TestShutdownClosesWebSockets(t *testing.T) {
	d := startDaemon(t, Config{})
	c, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan [2]any, 1)
	go func() {
		code, reason := rawCloseOn(t, c, d.addr)
		done <- [2]any{code, reason}
	}()
	// Wait until the connection is registered, then shut down.
	deadline := time.Now().Add(10 * time.Second)
	for {
		d.ws.mu.Lock()
		n := len(d.ws.conns)
		d.ws.mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.stop()
	select {
	case got := <-done:
		if got[0] != 1000 || got[1] != "Server shutting down" {
			t.Errorf("close: %v", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no close frame")
	}
}

// rawCloseOn upgrades on c and reads until a close frame, skipping the SSH
// server's version line.
func rawCloseOn(t *testing.T, c net.Conn, addr string) (int, string) {
	c.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(c, "GET /ssh HTTP/1.1\r\nHost: "+addr+"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: MDEyMzQ1Njc4OWFiY2RlZg==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		return -1, fmt.Sprint(err)
	}
	for {
		var h [2]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return -2, err.Error()
		}
		n := int(h[1] & 0x7f)
		if n == 126 {
			var l [2]byte
			io.ReadFull(br, l[:])
			n = int(binary.BigEndian.Uint16(l[:]))
		}
		payload := make([]byte, n)
		io.ReadFull(br, payload)
		if h[0]&0x0f == 8 {
			return int(binary.BigEndian.Uint16(payload)), string(payload[2:])
		}
	}
}

// TestTSPrefixEveryIsolation: the TypeScript client's exec form runs in
// its directory with its variables under every isolation mode, and HOME is
// that directory as the command sees it (under bwrap, the sandbox path).
func TestTSPrefixEveryIsolation(t *testing.T) {
	for _, iso := range []string{"none", "software", "bwrap"} {
		t.Run(iso, func(t *testing.T) {
			d := startDaemon(t, Config{Isolation: agentbe.Isolation(iso)})
			os.MkdirAll(filepath.Join(d.RootDir(), "u1"), 0o755)
			c := sshClient(t, d, "", "")
			dir := d.RootDir() + "/u1"
			cmd := `HOME='` + dir + `' GREETING='hi there' cd "` + dir + `" && printenv HOME && pwd && printenv GREETING && touch made-here`
			got, err := runSSH(t, c, cmd, "")
			l := strings.Split(got, "\n")
			// Under bwrap the directory is the command's boundary, mounted
			// at the workspace path.
			wantDir := "/u1"
			if iso == "bwrap" {
				wantDir = "/tmp/agentbe-workspace"
			}
			if err != nil || len(l) != 4 || l[0] != l[1] || !strings.HasSuffix(l[1], wantDir) || l[2] != "hi there" {
				t.Errorf("%q %v", got, err)
			}
			if _, err := os.Stat(filepath.Join(dir, "made-here")); err != nil {
				t.Errorf("not run in u1: %v", err)
			}
		})
	}
}
