package procs

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestCloseInheritedOnExec(t *testing.T) {
	f, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETFD, 0) // as if inherited
	if !cloexecMissing(fd) {
		t.Fatal("setup: descriptor still close-on-exec")
	}
	if n := CloseInheritedOnExec(); n < 1 {
		t.Fatalf("marked %d descriptors", n)
	}
	if cloexecMissing(fd) {
		t.Fatal("descriptor left without close-on-exec")
	}
	out, err := exec.Command("/bin/sh", "-c", "ls /proc/$$/fd 2>/dev/null || ls /dev/fd").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range strings.Fields(string(out)) {
		if name == strconv.Itoa(fd) {
			t.Errorf("descriptor %d reached a child", fd)
		}
	}
}
