package procs

import (
	"runtime"
	"testing"
)

func TestLeaveOneCore(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct{ before, want int }{{1, 1}, {2, 1}, {8, 7}} {
		runtime.GOMAXPROCS(tc.before)
		if got := leaveOneCore(false); got != tc.want || runtime.GOMAXPROCS(0) != tc.want {
			t.Errorf("from %d: got %d (GOMAXPROCS %d), want %d", tc.before, got, runtime.GOMAXPROCS(0), tc.want)
		}
	}
	runtime.GOMAXPROCS(4)
	if got := leaveOneCore(true); got != 4 || runtime.GOMAXPROCS(0) != 4 {
		t.Errorf("with GOMAXPROCS set: got %d (GOMAXPROCS %d), want 4 untouched", got, runtime.GOMAXPROCS(0))
	}
}
