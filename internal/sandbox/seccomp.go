package sandbox

import (
	"encoding/binary"
	"errors"
	"runtime"
	"sync"
)

// The seccomp filter that bwrap installs (--seccomp) on every sandboxed
// command. Its one job: a command must not leave a set-user-ID or
// set-group-ID file or directory on the host. Inside the sandbox the command
// may be the host's uid 0 (when the daemon runs as root) or the daemon's
// user, and as a file's owner it may set those bits with chmod, or create a
// file with them; "nosuid" only applies to the sandbox's own mount, so any
// host user could later run such a file with the owner's identity.
//
// The filter fails with EPERM every chmod-family call, and every call that
// creates a file, directory or node, whose mode has S_ISUID or S_ISGID. It
// also closes the paths whose mode it cannot see: openat2 (the mode is in a
// struct; callers fall back to openat on ENOSYS) and io_uring (whose opens
// bypass seccomp). Calls of another ABI (x32, or 32-bit compat) are refused
// outright, since their numbers differ.

const (
	bpfLD   = 0x00
	bpfW    = 0x00
	bpfABS  = 0x20
	bpfJMP  = 0x05
	bpfJEQ  = 0x10
	bpfJGE  = 0x30
	bpfJSET = 0x40
	bpfK    = 0x00
	bpfRET  = 0x06

	seccompRetAllow = 0x7fff0000
	seccompRetErrno = 0x00050000

	errnoEPERM  = 1
	errnoENOSYS = 38

	// setIDBits are S_ISUID and S_ISGID.
	setIDBits = 0o6000
	// x32SyscallBit marks x32-ABI calls on x86-64.
	x32SyscallBit = 0x40000000
)

// modeCall is a system call with a mode argument (its index, 0-based).
type modeCall struct {
	nr  uint32
	arg uint32
}

// seccompArch describes one architecture's system call numbers.
type seccompArch struct {
	audit  uint32     // AUDIT_ARCH_* value of the native ABI
	x32    bool       // refuse numbers with x32SyscallBit (x86-64)
	mode   []modeCall // calls whose mode must not carry setIDBits
	enosys []uint32   // calls refused with ENOSYS
}

var seccompArches = map[string]seccompArch{
	"amd64": {
		audit: 0xC000003E, x32: true,
		mode: []modeCall{
			{2, 2},   // open(path, flags, mode)
			{85, 1},  // creat(path, mode)
			{90, 1},  // chmod(path, mode)
			{91, 1},  // fchmod(fd, mode)
			{83, 1},  // mkdir(path, mode)
			{133, 1}, // mknod(path, mode, dev)
			{257, 3}, // openat(dirfd, path, flags, mode)
			{258, 2}, // mkdirat(dirfd, path, mode)
			{259, 2}, // mknodat(dirfd, path, mode, dev)
			{268, 2}, // fchmodat(dirfd, path, mode)
			{452, 2}, // fchmodat2(dirfd, path, mode, flags)
		},
		enosys: []uint32{437, 425, 426, 427}, // openat2, io_uring_setup/enter/register
	},
	"arm64": {
		audit: 0xC00000B7,
		mode: []modeCall{
			{56, 3},  // openat
			{34, 2},  // mkdirat
			{33, 2},  // mknodat
			{52, 1},  // fchmod
			{53, 2},  // fchmodat
			{452, 2}, // fchmodat2
		},
		enosys: []uint32{437, 425, 426, 427},
	},
}

// errNoSeccompArch is returned on architectures without a syscall table.
var errNoSeccompArch = errors.New("no seccomp filter for " + runtime.GOARCH + " (bwrap mode needs amd64 or arm64)")

// seccompFilter returns the filter for the running architecture as the raw
// array of struct sock_filter that bwrap --seccomp reads.
// It is built once per process.
var seccompFilter = sync.OnceValues(func() ([]byte, error) {
	a, ok := seccompArches[runtime.GOARCH]
	if !ok {
		return nil, errNoSeccompArch
	}
	return a.program(), nil
})

type bpfInsn struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

// program assembles the filter. Layout:
//
//	ld arch; jeq native ? next : deny
//	ld nr; [jge x32 → deny]
//	per mode call: jeq nr → its check block
//	per ENOSYS call: jeq nr → enosys
//	allow
//	per mode call: ld arg; jset setIDBits → deny; allow
//	deny: ret EPERM; enosys: ret ENOSYS
//
// Forward jumps are computed from the block sizes, all well under 255.
func (a seccompArch) program() []byte {
	var p []bpfInsn
	nMode, nSys := len(a.mode), len(a.enosys)
	// Index of the first check block, of deny and of enosys, once the
	// dispatch part (whose length is known) is laid out.
	head := 2 + 1 // ld arch, jeq, ld nr
	if a.x32 {
		head++
	}
	dispatchEnd := head + nMode + nSys + 1 // + the allow after the dispatch
	checkAt := func(i int) int { return dispatchEnd + 3*i }
	deny := dispatchEnd + 3*nMode
	enosys := deny + 1
	jump := func(from, to int) uint8 { return uint8(to - from - 1) }

	p = append(p, bpfInsn{code: bpfLD | bpfW | bpfABS, k: 4})
	p = append(p, bpfInsn{code: bpfJMP | bpfJEQ | bpfK, k: a.audit, jt: 0, jf: jump(1, deny)})
	p = append(p, bpfInsn{code: bpfLD | bpfW | bpfABS, k: 0})
	if a.x32 {
		at := len(p)
		p = append(p, bpfInsn{code: bpfJMP | bpfJGE | bpfK, k: x32SyscallBit, jt: jump(at, deny)})
	}
	for i, c := range a.mode {
		at := len(p)
		p = append(p, bpfInsn{code: bpfJMP | bpfJEQ | bpfK, k: c.nr, jt: jump(at, checkAt(i))})
	}
	for _, nr := range a.enosys {
		at := len(p)
		p = append(p, bpfInsn{code: bpfJMP | bpfJEQ | bpfK, k: nr, jt: jump(at, enosys)})
	}
	p = append(p, bpfInsn{code: bpfRET | bpfK, k: seccompRetAllow})
	for _, c := range a.mode {
		// Low 32 bits of args[c.arg] (struct seccomp_data: nr, arch, ip, args).
		p = append(p, bpfInsn{code: bpfLD | bpfW | bpfABS, k: 16 + 8*c.arg})
		at := len(p)
		p = append(p, bpfInsn{code: bpfJMP | bpfJSET | bpfK, k: setIDBits, jt: jump(at, deny)})
		p = append(p, bpfInsn{code: bpfRET | bpfK, k: seccompRetAllow})
	}
	p = append(p, bpfInsn{code: bpfRET | bpfK, k: seccompRetErrno | errnoEPERM})
	p = append(p, bpfInsn{code: bpfRET | bpfK, k: seccompRetErrno | errnoENOSYS})

	out := make([]byte, 0, 8*len(p))
	for _, in := range p {
		out = binary.NativeEndian.AppendUint16(out, in.code)
		out = append(out, in.jt, in.jf)
		out = binary.NativeEndian.AppendUint32(out, in.k)
	}
	return out
}
