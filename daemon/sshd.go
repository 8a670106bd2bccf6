package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentbe/agent-backend/internal/procs"
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
// no users created. sshd listens on Config.Host only when that is set (and
// the start fails if sshd's own configuration would listen elsewhere too).
// It is sent SIGTERM if the daemon dies.
type SSHDConfig struct {
	// Port is sshd's port; 0 means 22.
	Port int
	// Users are created (useradd -m -s /bin/bash, when missing) and given
	// these passwords (chpasswd, fed on stdin: never in argv).
	Users []SSHUser
	// PublicKey is added to the first user's authorized_keys (a link or
	// special file planted in that user's ~/.ssh fails the start with
	// ErrKeysLink).
	PublicKey string
	// AuthorizedKeysFile's content is added to the first user's
	// authorized_keys.
	AuthorizedKeysFile string
	// SSHDPath is the sshd binary; "" means DefaultSSHDPath.
	SSHDPath string
	// DropInPath is the sshd configuration drop-in written at start and
	// removed once sshd has stopped (or the file it replaced put back);
	// "" means DefaultSSHDDropIn.
	DropInPath string
	// ExtraArgs are appended to sshd's command line (e.g. -f for a test
	// configuration).
	ExtraArgs []string
}

// SSHUser is one account of SSHDConfig.
type SSHUser struct{ Name, Password string }

// sshdProcess is the supervised sshd.
type sshdProcess struct {
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	once   sync.Once
	dropIn *dropIn
	log    *slog.Logger
}

// startSSHD prepares users, keys and configuration and starts sshd -D -e,
// bound to the daemon's Host when one is set. Whatever fails after the
// drop-in is written puts the drop-in back as it was.
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
	d, err := writeDropIn(c.DropInPath)
	if err != nil {
		return err
	}
	os.MkdirAll("/run/sshd", 0o755)
	args := sshdArgs(c, s.cfg.Host)
	if s.cfg.Host != "" {
		if err := checkSSHDListen(ctx, c.SSHDPath, args, s.cfg.Host); err != nil {
			d.restore(s.cfg.Logger)
			return err
		}
	}
	cmd := exec.Command(c.SSHDPath, args...)
	cmd.Env = sshdEnv
	// A daemon killed outright (SIGKILL) must not leave sshd listening.
	procs.DeathSignal(cmd, syscall.SIGTERM)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		d.restore(s.cfg.Logger)
		return err
	}
	if err := procs.Start(cmd); err != nil {
		d.restore(s.cfg.Logger)
		return fmt.Errorf("daemon: start sshd: %w", err)
	}
	p := &sshdProcess{cmd: cmd, done: make(chan struct{}), dropIn: d, log: s.cfg.Logger}
	go logLines(s.cfg.Logger, "sshd", stderr)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	s.sshd = p
	return nil
}

var sshdEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

// sshdArgs is sshd's command line: foreground, log to stderr, the port,
// and, when the daemon is bound to one address, that address only (sshd
// listens on every interface otherwise).
func sshdArgs(c SSHDConfig, host string) []string {
	args := []string{"-D", "-e", "-p", strconv.Itoa(c.Port)}
	if host != "" {
		args = append(args, "-o", "ListenAddress="+host)
	}
	return append(args, c.ExtraArgs...)
}

// ErrSSHDListen is wrapped by the error of a conventional-SSH start whose
// sshd configuration would listen on more than the daemon's Host.
var ErrSSHDListen = errors.New("daemon: sshd would listen beyond --host")

// checkSSHDListen asks sshd for its effective configuration (sshd -T with
// the same arguments) and fails unless every address it would listen on is
// one of host's. ListenAddress adds to, never replaces, the ones of the
// configuration file: a "ListenAddress 0.0.0.0" there (the Docker image
// has one) would expose sshd on every interface whatever the daemon's
// --host says.
func checkSSHDListen(ctx context.Context, sshd string, args []string, host string) error {
	allowed, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return fmt.Errorf("daemon: sshd listen address %s: %w", host, err)
	}
	cmd := exec.CommandContext(ctx, sshd, append([]string{"-T"}, args...)...)
	cmd.Env = sshdEnv
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := procs.Output(cmd)
	if err != nil {
		return fmt.Errorf("daemon: sshd -T: %v: %s", err, firstLine(stderr.String()))
	}
	var listens []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "listenaddress" {
			continue
		}
		listens = append(listens, f[1])
		h, _, err := net.SplitHostPort(f[1])
		ip := net.ParseIP(h)
		if err != nil || ip == nil || !slices.ContainsFunc(allowed, func(a net.IPAddr) bool { return a.IP.Equal(ip) }) {
			return fmt.Errorf("%w: it would listen on %s, --host is %s: remove the ListenAddress lines of the sshd configuration", ErrSSHDListen, f[1], host)
		}
	}
	if len(listens) == 0 {
		return fmt.Errorf("%w: sshd -T reports no listen address", ErrSSHDListen)
	}
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// dropIn is the sshd configuration drop-in the daemon wrote, and what was
// at its path before (nothing, usually), to put back on exit.
type dropIn struct {
	path    string
	prev    []byte
	hadPrev bool
	mode    os.FileMode
}

// writeDropIn writes the daemon's drop-in at path, keeping what was there.
func writeDropIn(path string) (*dropIn, error) {
	d := &dropIn{path: path}
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		if d.prev, err = os.ReadFile(path); err == nil {
			d.hadPrev, d.mode = true, fi.Mode().Perm()
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("daemon: sshd drop-in: %w", err)
	}
	if err := os.WriteFile(path, []byte(sshdDropInContents), 0o644); err != nil {
		return nil, fmt.Errorf("daemon: sshd drop-in: %w", err)
	}
	return d, nil
}

// restore removes the drop-in, or puts back the file it replaced.
func (d *dropIn) restore(log *slog.Logger) {
	var err error
	if d.hadPrev {
		err = os.WriteFile(d.path, d.prev, d.mode)
	} else if err = os.Remove(d.path); errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		log.Error("daemon: sshd drop-in left in place", "path", d.path, "err", err)
	}
}

// wait returns once sshd exits, with an error wrapping ErrSSHDExited.
func (p *sshdProcess) wait() error {
	<-p.done
	if p.err != nil {
		return fmt.Errorf("%w: %v", ErrSSHDExited, p.err)
	}
	return ErrSSHDExited
}

// stop sends SIGTERM and waits up to d before killing, then removes the
// drop-in (or puts back what it replaced).
func (p *sshdProcess) stop(d time.Duration) {
	p.once.Do(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(d):
			p.cmd.Process.Kill()
			<-p.done
		}
		p.dropIn.restore(p.log)
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
			add := exec.CommandContext(ctx, "useradd", "-m", "-s", "/bin/bash", "--", u.Name)
			if out, err := procs.CombinedOutput(add); err != nil {
				return fmt.Errorf("daemon: useradd %s: %v: %s", u.Name, err, strings.TrimSpace(string(out)))
			}
		}
		pw.WriteString(u.Name + ":" + u.Password + "\n")
	}
	cmd := exec.CommandContext(ctx, "chpasswd")
	cmd.Stdin = strings.NewReader(pw.String())
	if out, err := procs.CombinedOutput(cmd); err != nil {
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
