package procs

import (
	"bytes"
	"os/exec"
)

// Run is cmd.Run with cmd started through Start.
func Run(cmd *exec.Cmd) error {
	if err := Start(cmd); err != nil {
		return err
	}
	return cmd.Wait()
}

// Output is cmd.Output with cmd started through Start; unlike cmd.Output,
// it leaves cmd.Stderr as the caller set it.
func Output(cmd *exec.Cmd) ([]byte, error) {
	var b bytes.Buffer
	cmd.Stdout = &b
	err := Run(cmd)
	return b.Bytes(), err
}

// CombinedOutput is cmd.CombinedOutput with cmd started through Start.
func CombinedOutput(cmd *exec.Cmd) ([]byte, error) {
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := Run(cmd)
	return b.Bytes(), err
}
