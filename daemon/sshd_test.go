package daemon

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// TestConventionalSSHD runs the real sshd on a high port through Run:
// users are created with passwords, the first gets the public key, a key
// login and a password login both work, /health reports ssh, shutdown
// stops sshd, and the test users are removed afterwards. sshd reads a test
// configuration (-f) that includes the drop-in the daemon writes, so the
// machine's own sshd configuration is not touched.
func TestConventionalSSHD(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test creates users: run it as root (CI does)")
	}
	dir := t.TempDir()
	users := []SSHUser{{"agentbe-t1", "pw-one"}, {"agentbe-t2", "pw two:x"}}
	t.Cleanup(func() {
		for _, u := range users {
			exec.Command("userdel", "-r", u.Name).Run()
		}
	})
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	sshPub, _ := ssh.NewPublicKey(pub)
	blk, _ := ssh.MarshalPrivateKey(priv, "")
	keyFile := filepath.Join(dir, "id")
	os.WriteFile(keyFile, pem.EncodeToMemory(blk), 0o600)
	dropIn := filepath.Join(dir, "sshd_config.d", "agentbe.conf")
	conf := filepath.Join(dir, "sshd_config")
	os.WriteFile(conf, []byte("Include "+dropIn+"\nHostKey /etc/ssh/ssh_host_ed25519_key\nPidFile none\nUsePAM yes\n"+
		"KbdInteractiveAuthentication no\nAuthorizedKeysFile .ssh/authorized_keys\n"), 0o644)
	sshPort := freeTCPPort(t)
	httpPort := freeTCPPort(t)
	var logBuf syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{RootDir: filepath.Join(dir, "ws"), Host: "127.0.0.1", Port: httpPort,
			SSHHostKeyPath: testKeyPath(t), Logger: newTestLogger(&logBuf),
			Conventional: &SSHDConfig{Port: sshPort, Users: users, PublicKey: string(ssh.MarshalAuthorizedKey(sshPub)),
				DropInPath: dropIn, ExtraArgs: []string{"-f", conf}}})
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v\n%s", err, logBuf.String())
			}
		case <-time.After(20 * time.Second):
			t.Error("Run did not return")
		}
		if _, err := os.Lstat(dropIn); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("drop-in left after shutdown: %v", err)
		}
	}()
	waitHTTP(t, httpPort, `"ssh":true`)

	u1, err := user.Lookup("agentbe-t1")
	if err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]os.FileMode{".ssh": 0o700, ".ssh/authorized_keys": 0o600} {
		fi, err := os.Stat(filepath.Join(u1.HomeDir, p))
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v", p, fi, err)
		}
	}
	if b, _ := os.ReadFile(dropIn); !strings.Contains(string(b), "PasswordAuthentication yes") {
		t.Errorf("drop-in: %q", b)
	}
	// The key works for the first user only; passwords work for both.
	askpass := filepath.Join(dir, "askpass.sh")
	os.WriteFile(askpass, []byte("#!/bin/sh\nprintf '%s\\n' \"$TEST_PW\"\n"), 0o755)
	run := func(args []string, env ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "/usr/bin/ssh", append([]string{"-F", "/dev/null", "-p", strconv.Itoa(sshPort),
			"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"}, args...)...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "DISPLAY=none"}, env...)
		cmd.Stdin = nil
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := waitSSHD(func() (string, error) {
		return run([]string{"-o", "BatchMode=yes", "-i", keyFile, "agentbe-t1@127.0.0.1", "whoami"})
	})
	if err != nil || strings.TrimSpace(out) != "agentbe-t1" {
		t.Errorf("key login: %q %v", out, err)
	}
	for _, u := range users {
		out, err = run([]string{"-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password",
			"-o", "NumberOfPasswordPrompts=1", u.Name + "@127.0.0.1", "whoami"},
			"SSH_ASKPASS="+askpass, "SSH_ASKPASS_REQUIRE=force", "TEST_PW="+u.Password)
		if err != nil || strings.TrimSpace(out) != u.Name {
			t.Errorf("password login %s: %q %v", u.Name, out, err)
		}
	}
	if strings.Contains(logBuf.String(), "pw-one") {
		t.Error("a password reached the log")
	}
	// Bound to --host: 127.0.0.2 reaches this machine's loopback too, but
	// not an sshd listening on 127.0.0.1 only.
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(sshPort)), 5*time.Second); err == nil {
		c.Close()
		t.Error("sshd answers on 127.0.0.2: it listens beyond --host 127.0.0.1")
	}
}

// TestConventionalSSHDListenBeyondHost: an sshd configuration with its own
// ListenAddress (the Docker image has "ListenAddress 0.0.0.0") would make
// sshd listen there too whatever --host says: the start is refused, sshd
// never runs, and the drop-in is gone.
func TestConventionalSSHDListenBeyondHost(t *testing.T) {
	_, err := os.Stat(DefaultSSHDPath)
	testenv.Require(t, err == nil && os.Geteuid() == 0, "sshd, run as root")
	dir := t.TempDir()
	dropIn := filepath.Join(dir, "sshd_config.d", "agentbe.conf")
	conf := filepath.Join(dir, "sshd_config")
	os.WriteFile(conf, []byte("Include "+dropIn+"\nHostKey /etc/ssh/ssh_host_ed25519_key\nPidFile none\nListenAddress 0.0.0.0\n"), 0o644)
	sshPort := freeTCPPort(t)
	err = Run(context.Background(), Config{RootDir: filepath.Join(dir, "ws"), Host: "127.0.0.1", Port: freeTCPPort(t),
		SSHHostKeyPath: testKeyPath(t), Logger: newTestLogger(io.Discard),
		Conventional: &SSHDConfig{Port: sshPort, DropInPath: dropIn, ExtraArgs: []string{"-f", conf}}})
	if !errors.Is(err, ErrSSHDListen) {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(err.Error(), "0.0.0.0:"+strconv.Itoa(sshPort)) {
		t.Errorf("the error does not name the address: %v", err)
	}
	if _, err := os.Lstat(dropIn); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("drop-in left: %v", err)
	}
	if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(sshPort))); err == nil {
		c.Close()
		t.Error("sshd is listening")
	}
}

// waitSSHD retries f while sshd is still starting.
func waitSSHD(f func() (string, error)) (string, error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, err := f()
		if err == nil || time.Now().After(deadline) || !strings.Contains(out, "Connection refused") {
			return out, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fakeSSHD writes an sshd stand-in: `-T` prints listen, anything else runs
// body.
func fakeSSHD(t *testing.T, listen, body string) string {
	t.Helper()
	fake := filepath.Join(t.TempDir(), "sshd")
	script := "#!/bin/sh\nif [ \"$1\" = -T ]; then printf 'port 22\\nlistenaddress %s\\n' '" + listen + "'; exit 0; fi\n" + body + "\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return fake
}

func TestSSHDExitEndsDaemon(t *testing.T) {
	dir := t.TempDir()
	fake := fakeSSHD(t, "127.0.0.1:22", "exit 3")
	dropIn := filepath.Join(dir, "d", "x.conf")
	err := Run(context.Background(), Config{RootDir: filepath.Join(dir, "ws"), Host: "127.0.0.1", Port: freeTCPPort(t),
		SSHHostKeyPath: testKeyPath(t), Logger: newTestLogger(io.Discard),
		Conventional: &SSHDConfig{SSHDPath: fake, DropInPath: dropIn}})
	if !errors.Is(err, ErrSSHDExited) {
		t.Errorf("Run: %v", err)
	}
	if _, err := os.Lstat(dropIn); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("drop-in left after sshd exited: %v", err)
	}
	err = Run(context.Background(), Config{RootDir: filepath.Join(dir, "ws"), Port: freeTCPPort(t),
		SSHHostKeyPath: testKeyPath(t), Logger: newTestLogger(io.Discard),
		Conventional: &SSHDConfig{SSHDPath: filepath.Join(dir, "missing")}})
	if !errors.Is(err, ErrSSHDUnavailable) {
		t.Errorf("missing sshd: %v", err)
	}
}

var freeTCPPort = testenv.FreePort

func waitHTTP(t *testing.T, port int, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/health")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), want) {
				return
			}
			t.Fatalf("health: %s", b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no /health: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keysOwner is the owner writeAuthorizedKeys hands files to in tests: a
// foreign uid when root (as in CI), this process's own otherwise.
func keysOwner() (int, int) {
	if os.Geteuid() == 0 {
		return 4242, 4343
	}
	return os.Getuid(), os.Getgid()
}

// canary is a directory and a file that no key installation may touch.
type canary struct{ dir, file string }

func newCanary(t *testing.T) canary {
	t.Helper()
	c := canary{dir: t.TempDir()}
	c.file = filepath.Join(c.dir, "file")
	if err := os.WriteFile(c.file, []byte("canary\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(c.dir, 0o751); err != nil {
		t.Fatal(err)
	}
	return c
}

// check fails t if the canary changed: modes, owners, content, entries.
func (c canary) check(t *testing.T) {
	t.Helper()
	for p, want := range map[string]os.FileMode{c.dir: os.ModeDir | 0o751, c.file: 0o644} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode() != want || int(st.Uid) != os.Geteuid() {
			t.Errorf("canary %s: mode %v owner %d", p, fi.Mode(), st.Uid)
		}
	}
	if b, _ := os.ReadFile(c.file); string(b) != "canary\n" {
		t.Errorf("canary file: %q", b)
	}
	if ents, _ := os.ReadDir(c.dir); len(ents) != 1 {
		t.Errorf("canary dir holds %d entries", len(ents))
	}
}

// TestWriteAuthorizedKeys: a fresh home gets .ssh (0700) and
// authorized_keys (0600) owned by the user, appended to on each start; an
// existing .ssh of root's with a loose mode is handed over and tightened.
func TestWriteAuthorizedKeys(t *testing.T) {
	uid, gid := keysOwner()
	home := t.TempDir()
	for _, k := range []string{"key-one\n", "key-two\n"} {
		if err := writeAuthorizedKeys(home, uid, gid, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".ssh/authorized_keys")); string(b) != "key-one\nkey-two\n" {
		t.Errorf("authorized_keys: %q", b)
	}
	for p, want := range map[string]os.FileMode{".ssh": os.ModeDir | 0o700, ".ssh/authorized_keys": 0o600} {
		fi, err := os.Lstat(filepath.Join(home, p))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); fi.Mode() != want || int(st.Uid) != uid || int(st.Gid) != gid {
			t.Errorf("%s: %v %d:%d", p, fi.Mode(), st.Uid, st.Gid)
		}
	}
	home2 := t.TempDir()
	os.Mkdir(filepath.Join(home2, ".ssh"), 0o755)
	if err := writeAuthorizedKeys(home2, uid, gid, nil); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(home2, ".ssh")); fi.Mode().Perm() != 0o700 {
		t.Errorf(".ssh mode %v", fi.Mode())
	}
}

// TestWriteAuthorizedKeysRefusesPlantedLinks: what the user planted in
// their home (links to a canary, a hard link, a FIFO, a foreign .ssh) is
// refused with ErrKeysLink, and the canary stays as it was.
func TestWriteAuthorizedKeysRefusesPlantedLinks(t *testing.T) {
	uid, gid := keysOwner()
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, home string, c canary)
	}{
		{".ssh link to a directory", func(t *testing.T, home string, c canary) {
			os.Symlink(c.dir, filepath.Join(home, ".ssh"))
		}},
		{"authorized_keys link to a file", func(t *testing.T, home string, c canary) {
			os.Mkdir(filepath.Join(home, ".ssh"), 0o700)
			os.Symlink(c.file, filepath.Join(home, ".ssh/authorized_keys"))
		}},
		{"authorized_keys dangling link", func(t *testing.T, home string, c canary) {
			os.Mkdir(filepath.Join(home, ".ssh"), 0o700)
			os.Symlink(filepath.Join(c.dir, "new"), filepath.Join(home, ".ssh/authorized_keys"))
		}},
		{"authorized_keys hard link", func(t *testing.T, home string, c canary) {
			os.Mkdir(filepath.Join(home, ".ssh"), 0o700)
			if err := os.Link(c.file, filepath.Join(home, ".ssh/authorized_keys")); err != nil {
				t.Skip("no hard link:", err)
			}
		}},
		{"authorized_keys FIFO", func(t *testing.T, home string, c canary) {
			os.Mkdir(filepath.Join(home, ".ssh"), 0o700)
			syscall.Mkfifo(filepath.Join(home, ".ssh/authorized_keys"), 0o600)
		}},
		{".ssh a FIFO", func(t *testing.T, home string, c canary) {
			syscall.Mkfifo(filepath.Join(home, ".ssh"), 0o600)
		}},
		{".ssh of another user", func(t *testing.T, home string, c canary) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a directory away")
			}
			os.Mkdir(filepath.Join(home, ".ssh"), 0o700)
			os.Chown(filepath.Join(home, ".ssh"), uid+1, gid)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, c := t.TempDir(), newCanary(t)
			tc.plant(t, home, c)
			err := writeAuthorizedKeys(home, uid, gid, []byte("attacker-chosen-key\n"))
			if !errors.Is(err, ErrKeysLink) {
				t.Errorf("err = %v, want ErrKeysLink", err)
			}
			if err != nil && strings.Contains(err.Error(), c.dir) {
				t.Errorf("the error names the link's target: %v", err)
			}
			c.check(t)
		})
	}
}

// TestWriteAuthorizedKeysSwap swaps ~/.ssh and authorized_keys between
// real ones and links to a canary while keys are installed again and
// again: whatever each call returns, the canary is never touched.
func TestWriteAuthorizedKeysSwap(t *testing.T) {
	uid, gid := keysOwner()
	home, c := t.TempDir(), newCanary(t)
	ssh, ak := filepath.Join(home, ".ssh"), filepath.Join(home, ".ssh", "authorized_keys")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			switch i % 4 {
			case 0: // .ssh: link to the canary directory
				os.RemoveAll(ssh)
				os.Symlink(c.dir, ssh)
			case 1: // back to a real directory
				os.Remove(ssh)
				os.Mkdir(ssh, 0o755)
			case 2: // authorized_keys: link to the canary file
				os.Remove(ak)
				os.Symlink(c.file, ak)
			case 3:
				os.Remove(ak)
			}
		}
	}()
	refused := 0
	for range 300 {
		if err := writeAuthorizedKeys(home, uid, gid, []byte("k\n")); err != nil {
			refused++
		}
	}
	close(stop)
	<-done
	c.check(t)
	t.Logf("%d of 300 installations refused", refused)
}

func TestSSHDArgs(t *testing.T) {
	for _, tc := range []struct {
		host string
		want string
	}{
		{"", "-D -e -p 2222 -f conf"},
		{"127.0.0.1", "-D -e -p 2222 -o ListenAddress=127.0.0.1 -f conf"},
		{"::1", "-D -e -p 2222 -o ListenAddress=::1 -f conf"},
		{"localhost", "-D -e -p 2222 -o ListenAddress=localhost -f conf"},
	} {
		got := strings.Join(sshdArgs(SSHDConfig{Port: 2222, ExtraArgs: []string{"-f", "conf"}}, tc.host), " ")
		if got != tc.want {
			t.Errorf("host %q: %s, want %s", tc.host, got, tc.want)
		}
	}
}

// TestSSHDDropInRemoved: the drop-in exists while the daemon runs and is
// gone after it (or the file it replaced is back) on every way out: a
// shutdown (what SIGTERM and SIGINT do), sshd exiting, sshd's
// configuration refused, the HTTP port taken.
func TestSSHDDropInRemoved(t *testing.T) {
	run := func(t *testing.T, sshd string, port int, dropIn string, whileUp func()) error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, Config{RootDir: filepath.Join(t.TempDir(), "ws"), Host: "127.0.0.1", Port: port,
				SSHHostKeyPath: testKeyPath(t), Logger: newTestLogger(io.Discard),
				Conventional: &SSHDConfig{SSHDPath: sshd, DropInPath: dropIn}})
		}()
		if whileUp != nil {
			waitHTTP(t, port, `"ssh":true`)
			if b, _ := os.ReadFile(dropIn); string(b) != sshdDropInContents {
				t.Errorf("drop-in while up: %q", b)
			}
			whileUp()
			cancel()
		}
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return")
			return nil
		}
	}
	gone := func(t *testing.T, dropIn string) {
		t.Helper()
		if _, err := os.Lstat(dropIn); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("drop-in left: %v", err)
		}
	}
	t.Run("shutdown", func(t *testing.T) {
		dropIn := filepath.Join(t.TempDir(), "sshd_config.d", "agentbe.conf")
		marker := testenv.SleepMarker()
		sshd := fakeSSHD(t, "127.0.0.1:22", "exec sleep "+marker)
		if err := run(t, sshd, freeTCPPort(t), dropIn, func() {}); err != nil {
			t.Errorf("Run: %v", err)
		}
		gone(t, dropIn)
		if left := testenv.ProcessesWith(marker); len(left) > 0 {
			t.Errorf("sshd left running: %q", left)
		}
	})
	t.Run("replaced file put back", func(t *testing.T) {
		dropIn := filepath.Join(t.TempDir(), "agentbe.conf")
		os.WriteFile(dropIn, []byte("# the admin's\n"), 0o600)
		sshd := fakeSSHD(t, "127.0.0.1:22", "exec sleep "+testenv.SleepMarker())
		if err := run(t, sshd, freeTCPPort(t), dropIn, func() {}); err != nil {
			t.Errorf("Run: %v", err)
		}
		b, _ := os.ReadFile(dropIn)
		if fi, err := os.Stat(dropIn); err != nil || string(b) != "# the admin's\n" || fi.Mode().Perm() != 0o600 {
			t.Errorf("after: %q %v", b, fi)
		}
	})
	t.Run("sshd exits", func(t *testing.T) {
		dropIn := filepath.Join(t.TempDir(), "agentbe.conf")
		if err := run(t, fakeSSHD(t, "127.0.0.1:22", "exit 3"), freeTCPPort(t), dropIn, nil); !errors.Is(err, ErrSSHDExited) {
			t.Errorf("Run: %v", err)
		}
		gone(t, dropIn)
	})
	t.Run("listens beyond host", func(t *testing.T) {
		dropIn := filepath.Join(t.TempDir(), "agentbe.conf")
		marker := testenv.SleepMarker()
		err := run(t, fakeSSHD(t, "0.0.0.0:22", "exec sleep "+marker), freeTCPPort(t), dropIn, nil)
		if !errors.Is(err, ErrSSHDListen) || !strings.Contains(err.Error(), "0.0.0.0:22") {
			t.Errorf("Run: %v", err)
		}
		gone(t, dropIn)
		if left := testenv.ProcessesWith(marker); len(left) > 0 {
			t.Errorf("sshd started: %q", left)
		}
	})
	t.Run("HTTP port taken", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		dropIn := filepath.Join(t.TempDir(), "agentbe.conf")
		marker := testenv.SleepMarker()
		err = run(t, fakeSSHD(t, "127.0.0.1:22", "exec sleep "+marker), ln.Addr().(*net.TCPAddr).Port, dropIn, nil)
		if err == nil {
			t.Error("Run on a taken port succeeded")
		}
		gone(t, dropIn)
		if left := testenv.ProcessesWith(marker); len(left) > 0 {
			t.Errorf("sshd left running: %q", left)
		}
	})
}
