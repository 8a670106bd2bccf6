//go:build !linux

package procs

import (
	"os/exec"
	"time"
)

// OutputPipes is Linux-only (it needs pidfds); elsewhere os/exec's copying
// goroutines collect the output.
type OutputPipes struct{}

// NewOutputPipes returns nil: the caller lets os/exec collect the output.
func NewOutputPipes(*exec.Cmd) (*OutputPipes, error) { return nil, nil }

// Started does nothing; see output_linux.go.
func (p *OutputPipes) Started(error) {}

// Wait waits for cmd; see output_linux.go.
func (p *OutputPipes) Wait(cmd *exec.Cmd, _, _ *CapBuffer, _ time.Duration) error { return cmd.Wait() }
