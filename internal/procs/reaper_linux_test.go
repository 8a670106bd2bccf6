package procs

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReapOrphans: in a process that reaps orphans, the processes its
// commands leave behind are reaped once they exit, and none of the
// commands it starts itself is taken from its Wait (run in a helper
// process, since the reaper is for the whole process).
func TestReapOrphans(t *testing.T) {
	helper := exec.Command(os.Args[0], "-test.run=^TestReapOrphansHelper$", "-test.v")
	helper.Env = append(os.Environ(), "PROCS_REAPER_HELPER=1")
	out, err := helper.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	var orphans, zombies, waitErrs int
	for _, line := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "reaped %d zombies %d wait-errors %d", &orphans, &zombies, &waitErrs); err == nil {
			break
		}
	}
	if orphans < 3 || zombies != 0 || waitErrs != 0 {
		t.Fatalf("orphans reaped %d (want >= 3), zombie children left %d, failed waits %d\n%s", orphans, zombies, waitErrs, out)
	}
}

// TestReapOrphansHelper is the process TestReapOrphans runs.
func TestReapOrphansHelper(t *testing.T) {
	if os.Getenv("PROCS_REAPER_HELPER") != "1" {
		t.Skip("run by TestReapOrphans")
	}
	if err := ReapOrphans(); err != nil {
		t.Fatal(err)
	}
	// Each leaves a sleep behind, which this process inherits.
	for range 3 {
		if out, err := CombinedOutput(exec.Command("/bin/sh", "-c", "sleep 0.2 & exit 0")); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	var waitErrs atomic.Int32
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			if err := Run(exec.Command("/bin/true")); err != nil {
				t.Log(err)
				waitErrs.Add(1)
			}
		})
	}
	wg.Wait()
	zombies := -1
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if zombies = zombieChildren(); zombies == 0 && ReapedOrphans() >= 3 {
			break
		}
	}
	fmt.Printf("reaped %d zombies %d wait-errors %d\n", ReapedOrphans(), zombies, waitErrs.Load())
}

func zombieChildren() int {
	n := 0
	for _, pid := range childPIDs(os.Getpid()) {
		if st, ok := readProcStat(pid); ok && st.state == 'Z' {
			n++
		}
	}
	return n
}

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		line string
		want procStat
		ok   bool
	}{
		{"42 (bwrap) Z 1 42 42 0 -1 4194560 95 0 0 0 0 0 0 0 20 0 1 0 123456 0 0", procStat{'Z', 1, 42, 123456}, true},
		{"7 (a) (b) c) S 3 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 1 2", procStat{'S', 3, 7, 99}, true},
		{"7 (short) S 3 7", procStat{}, false},
		{"no parenthesis S 3", procStat{}, false},
		{"7 (x) SS 3 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99", procStat{}, false},
		{"7 (x) S x 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99", procStat{}, false},
		{"7 (x) S 3 y 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99", procStat{}, false},
	}
	for _, tt := range tests {
		got, ok := parseProcStat([]byte(tt.line))
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseProcStat(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("42 (bwrap) Z 1 42 42 0 -1 4194560 95 0 0 0 0 0 0 0 20 0 1 0 123456 0 0"))
	f.Add([]byte("7 (a) (b) c) S 3 7"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, ok := parseProcStat(b)
		if !ok && st != (procStat{}) {
			t.Fatalf("not ok but %+v", st)
		}
	})
}
