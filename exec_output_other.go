//go:build !linux

package agentbe

import (
	"os/exec"
	"time"
)

// outputPipes is Linux-only (it needs pidfds); elsewhere os/exec's copying
// goroutines collect the output.
type outputPipes struct{}

func newOutputPipes(*exec.Cmd) (*outputPipes, error) { return nil, nil }

func (p *outputPipes) started(error) {}

func (p *outputPipes) wait(cmd *exec.Cmd, _, _ *capBuffer, _ time.Duration) error { return cmd.Wait() }
