package sftpjail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
)

const opensshServer = "/usr/lib/openssh/sftp-server"

// needTool returns the path of an external tool, skipping the test when it
// is missing outside CI and failing it in CI (which installs it).
func needTool(t testing.TB, name string) string {
	t.Helper()
	p := name
	var err error
	if filepath.IsAbs(name) {
		_, err = os.Stat(name)
	} else {
		p, err = exec.LookPath(name)
	}
	testenv.Require(t, err == nil, fmt.Sprintf("%s (%v)", name, err))
	return p
}

// pipeRW joins a read end and a write end; Close closes both.
type pipeRW struct {
	io.Reader
	io.Writer
	closers []io.Closer
}

func (p *pipeRW) Close() error {
	var first error
	for _, c := range p.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// rawSocketPair returns a connected Unix socket pair, close-on-exec.
func rawSocketPair(t testing.TB) [2]int {
	t.Helper()
	syscall.ForkLock.RLock() // no exec may inherit the pair before CloseOnExec
	defer syscall.ForkLock.RUnlock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	return fds
}

// socketPair returns the two ends of a connected Unix socket pair, both
// non-blocking so the runtime's poller serves them.
func socketPair(t testing.TB) (*os.File, *os.File) {
	t.Helper()
	fds := rawSocketPair(t)
	syscall.SetNonblock(fds[0], true)
	syscall.SetNonblock(fds[1], true)
	return os.NewFile(uintptr(fds[0]), "sftp-client"), os.NewFile(uintptr(fds[1]), "sftp-server")
}

// startServer runs Serve on dir over a socket pair (as `sftp -D`
// connects a server) and returns the client's end and a function waiting
// for Serve's result.
func startServer(t testing.TB, dir string, opts *ServerOptions) (io.ReadWriteCloser, func() error) {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	client, server := socketPair(t)
	done := make(chan error, 1)
	go func() {
		err := Serve(server, root, opts)
		server.Close()
		root.Close()
		done <- err
	}()
	var once sync.Once
	var serveErr error
	wait := func() error {
		once.Do(func() {
			select {
			case serveErr = <-done:
			case <-time.After(30 * time.Second):
				serveErr = errors.New("Serve did not return")
			}
		})
		return serveErr
	}
	return client, wait
}

// newTestClient starts our server on a new temporary workspace and
// connects our client to it.
func newTestClient(t testing.TB) (*Client, string) {
	t.Helper()
	dir := tempDir(t)
	return newClientFor(t, dir, nil), dir
}

func newClientFor(t testing.TB, dir string, opts *ServerOptions) *Client {
	t.Helper()
	rw, wait := startServer(t, dir, opts)
	c, err := NewClient(rw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if err := wait(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return c
}

// tempDir is t.TempDir with symlinks resolved, so it is the host path.
func tempDir(t testing.TB) string {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// cmdRW is a socket connected to a child process's stdin and stdout;
// Close ends it.
type cmdRW struct {
	*os.File
	cmd *exec.Cmd
}

func (c *cmdRW) Close() error {
	c.File.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		return <-done
	}
}

// startProcess runs an SFTP server process in dir, its stdin and stdout
// one end of a socket pair (as `sftp -D` connects it), and returns the
// other end.
func startProcess(t testing.TB, dir string, name string, args ...string) io.ReadWriteCloser {
	t.Helper()
	fds := rawSocketPair(t)
	// Our end non-blocking, so the runtime's poller waits for it; the
	// child's end stays blocking, as `sftp -D` hands it over.
	syscall.SetNonblock(fds[0], true)
	ours, theirs := os.NewFile(uintptr(fds[0]), "sftp-client"), os.NewFile(uintptr(fds[1]), "sftp-server")
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = theirs, theirs, os.Stderr
	if err := cmd.Start(); err != nil {
		ours.Close()
		theirs.Close()
		t.Fatal(err)
	}
	theirs.Close()
	return &cmdRW{File: ours, cmd: cmd}
}

// opensshClient connects our client to OpenSSH's sftp-server run in dir.
func opensshClient(t testing.TB, dir string) *Client {
	t.Helper()
	srv := needTool(t, opensshServer)
	c, err := NewClient(startProcess(t, dir, srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// agentBackendBin returns the CLI binary: $AGENTBE_BIN when set, else one
// built once per test process into a temporary directory.
func agentBackendBin(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("AGENTBE_BIN"); p != "" {
		return p
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sftpjail-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "agent-backend")
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/agent-backend")
		cmd.Dir = filepath.Join(filepath.Dir(file), "..")
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" && os.Getenv("AGENTBE_BIN") == "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
