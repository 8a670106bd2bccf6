package sandbox

import (
	"encoding/binary"
	"testing"
)

// runBPF interprets the subset of classic BPF the filter uses over a
// struct seccomp_data (nr, arch, ip, args[6]) and returns the action.
func runBPF(t *testing.T, prog []byte, nr, arch uint32, args [6]uint64) uint32 {
	t.Helper()
	if len(prog)%8 != 0 || len(prog)/8 > 4096 {
		t.Fatalf("program of %d bytes", len(prog))
	}
	data := make([]byte, 64)
	binary.NativeEndian.PutUint32(data[0:], nr)
	binary.NativeEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.NativeEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog)/8; pc++ {
		in := prog[8*pc:]
		code := binary.NativeEndian.Uint16(in)
		jt, jf := int(in[2]), int(in[3])
		k := binary.NativeEndian.Uint32(in[4:])
		switch code {
		case bpfLD | bpfW | bpfABS:
			if k+4 > 64 {
				t.Fatalf("load out of seccomp_data at %d", k)
			}
			acc = binary.NativeEndian.Uint32(data[k:])
		case bpfJMP | bpfJEQ | bpfK:
			if acc == k {
				pc += jt
			} else {
				pc += jf
			}
		case bpfJMP | bpfJGE | bpfK:
			if acc >= k {
				pc += jt
			} else {
				pc += jf
			}
		case bpfJMP | bpfJSET | bpfK:
			if acc&k != 0 {
				pc += jt
			} else {
				pc += jf
			}
		case bpfRET | bpfK:
			return k
		default:
			t.Fatalf("unexpected instruction %#x at %d", code, pc)
		}
		if pc+1 >= len(prog)/8 && code != bpfRET|bpfK {
			t.Fatalf("jump past the end at %d", pc)
		}
	}
	t.Fatal("fell off the end of the program")
	return 0
}

func TestSeccompFilterSemantics(t *testing.T) {
	const (
		allow  = seccompRetAllow
		eperm  = seccompRetErrno | errnoEPERM
		enosys = seccompRetErrno | errnoENOSYS
	)
	for name, a := range seccompArches {
		t.Run(name, func(t *testing.T) {
			prog := a.program()
			for _, mc := range a.mode {
				for _, tc := range []struct {
					mode uint64
					want uint32
				}{
					{0o755, allow}, {0o644, allow}, {0o1777, allow}, {0o4755, eperm}, {0o2755, eperm},
					{0o6755, eperm}, {0o4000, eperm}, {0o100000 | 0o4755, eperm}, {1<<40 | 0o755, allow},
				} {
					var args [6]uint64
					args[mc.arg] = tc.mode
					if got := runBPF(t, prog, mc.nr, a.audit, args); got != tc.want {
						t.Errorf("nr %d mode %o: action %#x, want %#x", mc.nr, tc.mode, got, tc.want)
					}
					// The mode in another argument does not trigger.
					other := [6]uint64{}
					other[(mc.arg+1)%6] = 0o4755
					if got := runBPF(t, prog, mc.nr, a.audit, other); got != allow {
						t.Errorf("nr %d: mode in argument %d refused", mc.nr, (mc.arg+1)%6)
					}
				}
			}
			for _, nr := range a.enosys {
				if got := runBPF(t, prog, nr, a.audit, [6]uint64{}); got != enosys {
					t.Errorf("nr %d: %#x, want ENOSYS", nr, got)
				}
			}
			for _, nr := range []uint32{0, 1, 3, 59, 63, 231, 1000} { // read, write, close, execve…
				if got := runBPF(t, prog, nr, a.audit, [6]uint64{0o4755, 0o4755, 0o4755, 0o4755}); got != allow {
					t.Errorf("unrelated nr %d refused (%#x)", nr, got)
				}
			}
			if got := runBPF(t, prog, 90, 0x40000003, [6]uint64{}); got != eperm {
				t.Errorf("foreign ABI allowed: %#x", got)
			}
			if a.x32 {
				if got := runBPF(t, prog, 90|x32SyscallBit, a.audit, [6]uint64{0, 0o755}); got != eperm {
					t.Errorf("x32 call allowed: %#x", got)
				}
			}
		})
	}
}
