package daemon

import (
	"io"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	ptydev "github.com/agentbe/agent-backend/internal/pty"
)

// ptySupported reports whether this platform can give a session a pty.
const ptySupported = ptydev.Supported

// ptyDrain bounds how long output still buffered in the pty is forwarded
// after the command exited (a background job may hold the terminal open).
const ptyDrain = 500 * time.Millisecond

// runOnPTY runs command with a pty as its stdin, stdout and stderr,
// forwarding the channel to the pty master and back.
//
// The command runs through the backend like any other (isolation and the
// safety check apply). The backend cannot make the pty a command's
// controlling terminal (agentbe.ExecOptions has no such option), so an
// interactive shell gets it through setsid -c (see shellCommand); a
// command run with `ssh -t host cmd` sees a terminal on its standard
// descriptors without controlling it (^C does not signal it, closing the
// channel kills it like any exec).
func (ss *session) runOnPTY(b agentbe.Backend, pty *ptyRequest, command, dir string, env map[string]string) error {
	master, slave, err := ptydev.Open()
	if err != nil {
		// No pty: fall back to a plain command.
		return ss.runCommand(b, nil, command, dir, env)
	}
	ss.mu.Lock()
	ptydev.SetSize(master, int(ss.size[0]), int(ss.size[1]))
	ss.master = master
	ss.mu.Unlock()

	go io.Copy(master, ss.ch) // keystrokes; ends with the channel or the master
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		io.Copy(ss.ch, master) // ends with EIO once no slave is open
	}()

	_, err = b.Exec(ss.ctx, command, agentbe.ExecOptions{
		Dir: dir, Env: env, Stdin: slave, Stdout: slave, Stderr: slave,
	})
	slave.Close()
	select {
	case <-outDone:
	case <-time.After(ptyDrain):
	}
	ss.mu.Lock()
	ss.master = nil
	ss.mu.Unlock()
	master.Close()
	<-outDone
	return err
}
