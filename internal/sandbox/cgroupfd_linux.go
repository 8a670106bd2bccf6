package sandbox

import "os/exec"

// useCgroupFD makes the clone that starts cmd create it in the cgroup
// whose directory fd is (cgroup v2: CLONE_INTO_CGROUP).
func useCgroupFD(cmd *exec.Cmd, fd int) {
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = fd
}
