package acp

import (
	"context"
	"io"
	"os"
	"sync"

	agentbe "github.com/agentbe/agent-backend"
)

// process is one agent process started through a backend's Exec.
type process struct {
	stdin  *os.File      // the proxy writes JSON-RPC lines here
	stdout *os.File      // the proxy reads the agent's lines here
	done   chan struct{} // closed once Exec returned
	err    error         // Exec's error, readable after done
}

// startProcess runs command through b.Exec with pipes for stdin and stdout
// and returns at once; Exec runs until the process exits or ctx is done
// (which kills its whole process group, or sandbox). Going through Exec
// means the backend's isolation mode, its dangerous-command check, its
// clean environment (plus env) and its root or scope directory apply.
//
// The pipe ends given to the child are *os.File, so Exec hands them to the
// process directly (no copying goroutine); this side closes its copies once
// Exec returns, which is what makes the stdout reader see EOF.
func startProcess(ctx context.Context, b agentbe.Backend, command string, env map[string]string, stderr io.Writer) (*process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	p := &process{stdin: inW, stdout: outR, done: make(chan struct{})}
	go func() {
		_, err := b.Exec(ctx, command, agentbe.ExecOptions{Stdin: inR, Stdout: outW, Stderr: stderr, Env: env})
		inR.Close()
		outW.Close()
		p.err = err
		close(p.done)
	}()
	return p, nil
}

// tailBuffer keeps the last max bytes written to it (the agent's stderr,
// for diagnostics).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
