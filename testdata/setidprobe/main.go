//go:build linux

// Command setidprobe tries, with raw system calls, every way the sandbox's
// seccomp filter must close to leave a set-user-ID or set-group-ID file on
// the host, then one legitimate chmod. It prints one line per attempt:
// "name errno" (0 for success). The test that runs it (inside the sandbox)
// checks the files on the host; this program only makes the attempts.
package main

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

var atFDCWDInt = -100

// atFDCWD is AT_FDCWD as a system call argument.
var atFDCWD = uintptr(atFDCWDInt)

func cstr(s string) uintptr {
	b := append([]byte(s), 0)
	return uintptr(unsafe.Pointer(&b[0]))
}

func report(name string, _ uintptr, errno syscall.Errno) {
	fmt.Printf("%s %d\n", name, int(errno))
}

func main() {
	must := func(err error) {
		if err != nil {
			fmt.Println("setup", err)
			os.Exit(2)
		}
	}
	for _, f := range []string{"chmod", "fchmod", "fchmodat", "fchmodat2", "x32"} {
		must(os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755))
	}
	r1, _, e := syscall.Syscall(syscall.SYS_FCHMODAT, atFDCWD, cstr("fchmodat"), 0o4755)
	report("fchmodat", r1, e)
	r1, _, e = syscall.Syscall6(452, atFDCWD, cstr("fchmodat2"), 0o6755, 0, 0, 0)
	report("fchmodat2", r1, e)
	f, err := os.Open("fchmod")
	must(err)
	r1, _, e = syscall.Syscall(syscall.SYS_FCHMOD, f.Fd(), 0o2755, 0)
	report("fchmod", r1, e)
	r1, _, e = syscall.Syscall6(syscall.SYS_OPENAT, atFDCWD, cstr("openat-created"), uintptr(syscall.O_CREAT|syscall.O_WRONLY), 0o4755, 0, 0)
	report("openat-creat", r1, e)
	r1, _, e = syscall.Syscall6(syscall.SYS_MKDIRAT, atFDCWD, cstr("mkdirat-created"), 0o2755, 0, 0, 0)
	report("mkdirat", r1, e)
	r1, _, e = syscall.Syscall6(syscall.SYS_MKNODAT, atFDCWD, cstr("mknodat-created"), syscall.S_IFREG|0o4755, 0, 0, 0)
	report("mknodat", r1, e)
	// openat2 (437): the mode sits in a struct the filter cannot read.
	how := [3]uint64{uint64(syscall.O_CREAT | syscall.O_WRONLY), 0o4755, 0}
	r1, _, e = syscall.Syscall6(437, atFDCWD, cstr("openat2-created"), uintptr(unsafe.Pointer(&how[0])), unsafe.Sizeof(how), 0, 0)
	report("openat2", r1, e)
	// io_uring_setup (425): its opens would bypass seccomp.
	var params [120]byte
	r1, _, e = syscall.Syscall(425, 4, uintptr(unsafe.Pointer(&params[0])), 0)
	report("io_uring_setup", r1, e)
	if runtime.GOARCH == "amd64" {
		r1, _, e = syscall.Syscall(syscall.SYS_CHMOD, cstr("chmod"), 0o4755, 0)
		report("chmod", r1, e)
		r1, _, e = syscall.Syscall(syscall.SYS_CHMOD|0x40000000, cstr("x32"), 0o4755, 0)
		report("x32-chmod", r1, e)
		r1, _, e = syscall.Syscall(syscall.SYS_OPEN, cstr("open-created"), uintptr(syscall.O_CREAT|syscall.O_WRONLY), 0o6755)
		report("open-creat", r1, e)
		r1, _, e = syscall.Syscall(syscall.SYS_CREAT, cstr("creat-created"), 0o4755, 0)
		report("creat", r1, e)
		r1, _, e = syscall.Syscall(syscall.SYS_MKDIR, cstr("mkdir-created"), 0o2755, 0)
		report("mkdir", r1, e)
	}
	// What must keep working: an ordinary chmod and an ordinary create.
	r1, _, e = syscall.Syscall(syscall.SYS_FCHMODAT, atFDCWD, cstr("fchmodat"), 0o700)
	report("plain-chmod", r1, e)
	r1, _, e = syscall.Syscall6(syscall.SYS_OPENAT, atFDCWD, cstr("plain-created"), uintptr(syscall.O_CREAT|syscall.O_WRONLY), 0o644, 0, 0)
	report("plain-creat", r1, e)
}
