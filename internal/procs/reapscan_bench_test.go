//go:build linux

package procs

import (
	"os/exec"
	"testing"
)

// BenchmarkReapScan is what the reaper costs: on a SIGCHLD with no zombie
// to find (the usual case: os/exec has waited for its child), and a full
// scan (every reapInterval, or when a zombie is there), which lists this
// process's children over all its threads and reads the stat of each;
// here 8 sleeping children of its own, recorded, so none is reaped.
func BenchmarkReapScan(b *testing.B) {
	reaping.Store(true)
	defer reaping.Store(false)
	for range 8 {
		cmd := exec.Command("sleep", "60")
		if err := Start(cmd); err != nil {
			b.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
	}
	for _, full := range []bool{false, true} {
		b.Run(map[bool]string{false: "signal", true: "full"}[full], func(b *testing.B) {
			for range b.N {
				reapOnce(full)
			}
		})
	}
}
