package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults of SSHDConfig.
const (
	DefaultSSHDPath    = "/usr/sbin/sshd"
	DefaultSSHDDropIn  = "/etc/ssh/sshd_config.d/agentbe.conf"
	DefaultSSHDPort    = 22
	sshdDropInContents = "PasswordAuthentication yes\nPermitRootLogin yes\nChallengeResponseAuthentication yes\n" +
		"MaxSessions 64\nMaxStartups 10:30:100\nClientAliveInterval 60\nClientAliveCountMax 3\n"
)

// ErrSSHDExited is wrapped by Serve's error when the supervised sshd exits.
var ErrSSHDExited = errors.New("daemon: sshd exited")

// ErrSSHDUnavailable is returned when conventional SSH cannot start (not
// Linux, or no sshd binary).
var ErrSSHDUnavailable = errors.New("daemon: conventional SSH unavailable")

// SSHDConfig configures the conventional sshd the daemon can supervise
// (--conventional-ssh). The zero value runs /usr/sbin/sshd on port 22 with
// no users created.
type SSHDConfig struct {
	// Port is sshd's port; 0 means 22.
	Port int
	// Users are created (useradd -m -s /bin/bash, when missing) and given
	// these passwords (chpasswd, fed on stdin: never in argv).
	Users []SSHUser
	// PublicKey is added to the first user's authorized_keys.
	PublicKey string
	// AuthorizedKeysFile's content is added to the first user's
	// authorized_keys.
	AuthorizedKeysFile string
	// SSHDPath is the sshd binary; "" means DefaultSSHDPath.
	SSHDPath string
	// DropInPath is the sshd configuration drop-in written at start; ""
	// means DefaultSSHDDropIn.
	DropInPath string
	// ExtraArgs are appended to sshd's command line (e.g. -f for a test
	// configuration).
	ExtraArgs []string
}

// SSHUser is one account of SSHDConfig.
type SSHUser struct{ Name, Password string }

// sshdProcess is the supervised sshd.
type sshdProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	once sync.Once
}

// startSSHD prepares users, keys and configuration and starts sshd -D -e.
func (s *Server) startSSHD(ctx context.Context) error {
	c := *s.cfg.Conventional
	if c.SSHDPath == "" {
		c.SSHDPath = DefaultSSHDPath
	}
	if c.DropInPath == "" {
		c.DropInPath = DefaultSSHDDropIn
	}
	if c.Port == 0 {
		c.Port = DefaultSSHDPort
	}
	if runtime.GOOS != "linux" {
		return fmt.Errorf("%w: --conventional-ssh requires Linux", ErrSSHDUnavailable)
	}
	if fi, err := os.Stat(c.SSHDPath); err != nil || fi.IsDir() {
		return fmt.Errorf("%w: %s not found", ErrSSHDUnavailable, c.SSHDPath)
	}
	if os.Geteuid() != 0 {
		s.cfg.Logger.Warn("daemon: --conventional-ssh without root privileges: user setup and sshd will likely fail")
	}
	if err := setupSSHUsers(ctx, c); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.DropInPath), 0o755); err != nil {
		return fmt.Errorf("daemon: sshd drop-in: %w", err)
	}
	if err := os.WriteFile(c.DropInPath, []byte(sshdDropInContents), 0o644); err != nil {
		return fmt.Errorf("daemon: sshd drop-in: %w", err)
	}
	os.MkdirAll("/run/sshd", 0o755)
	args := append([]string{"-D", "-e", "-p", strconv.Itoa(c.Port)}, c.ExtraArgs...)
	cmd := exec.Command(c.SSHDPath, args...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("daemon: start sshd: %w", err)
	}
	p := &sshdProcess{cmd: cmd, done: make(chan struct{})}
	go logLines(s.cfg.Logger, "sshd", stderr)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	s.sshd = p
	return nil
}

// wait returns once sshd exits, with an error wrapping ErrSSHDExited.
func (p *sshdProcess) wait() error {
	<-p.done
	if p.err != nil {
		return fmt.Errorf("%w: %v", ErrSSHDExited, p.err)
	}
	return ErrSSHDExited
}

// stop sends SIGTERM and waits up to d before killing.
func (p *sshdProcess) stop(d time.Duration) {
	p.once.Do(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(d):
			p.cmd.Process.Kill()
			<-p.done
		}
	})
}

func logLines(log *slog.Logger, who string, r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		log.Info(who, "line", sc.Text())
	}
}

// setupSSHUsers creates the users, sets their passwords and installs the
// first user's keys. Every program runs from an argv; passwords travel on
// chpasswd's stdin only.
func setupSSHUsers(ctx context.Context, c SSHDConfig) error {
	if len(c.Users) == 0 {
		return nil
	}
	var pw strings.Builder
	for _, u := range c.Users {
		if u.Name == "" || u.Password == "" || strings.ContainsAny(u.Name, ":\n") || strings.Contains(u.Password, "\n") {
			return fmt.Errorf("daemon: invalid SSH user entry for %q", u.Name)
		}
		if _, err := user.Lookup(u.Name); err != nil {
			if out, err := exec.CommandContext(ctx, "useradd", "-m", "-s", "/bin/bash", "--", u.Name).CombinedOutput(); err != nil {
				return fmt.Errorf("daemon: useradd %s: %v: %s", u.Name, err, strings.TrimSpace(string(out)))
			}
		}
		pw.WriteString(u.Name + ":" + u.Password + "\n")
	}
	cmd := exec.CommandContext(ctx, "chpasswd")
	cmd.Stdin = strings.NewReader(pw.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("daemon: chpasswd: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return installKeys(c)
}

// installKeys adds the configured keys to the first user's
// ~/.ssh/authorized_keys (see writeAuthorizedKeys).
func installKeys(c SSHDConfig) error {
	u, err := user.Lookup(c.Users[0].Name)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return fmt.Errorf("daemon: user %s: uid %q", u.Username, u.Uid)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return fmt.Errorf("daemon: user %s: gid %q", u.Username, u.Gid)
	}
	var keys strings.Builder
	if c.PublicKey != "" {
		keys.WriteString(strings.TrimSpace(c.PublicKey) + "\n")
	}
	if c.AuthorizedKeysFile != "" {
		b, err := os.ReadFile(c.AuthorizedKeysFile)
		if err != nil {
			return fmt.Errorf("daemon: --ssh-authorized-keys: %w", err)
		}
		keys.Write(b)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			keys.WriteByte('\n')
		}
	}
	return writeAuthorizedKeys(u.HomeDir, uid, gid, []byte(keys.String()))
}
