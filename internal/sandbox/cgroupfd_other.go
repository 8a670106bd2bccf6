//go:build !linux

package sandbox

import "os/exec"

// useCgroupFD is never reached where there are no cgroups.
func useCgroupFD(*exec.Cmd, int) {}
