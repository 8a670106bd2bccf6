package testenv

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestFreePortIsFree(t *testing.T) {
	p := FreePort(t)
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("port %d not free: %v", p, err)
	}
	ln.Close()
	if lo := ephemeralLow(); lo > firstPort+1000 && (p < firstPort || p >= lo) {
		t.Errorf("port %d is not in [%d, %d): the next ephemeral port of any connection could take it", p, firstPort, lo)
	}
}

func TestRequireSkipsOutsideCI(t *testing.T) {
	t.Setenv("CI", "")
	skipped := false
	t.Run("missing", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Require(t, false, "a tool")
		t.Error("Require returned for a missing tool")
	})
	if !skipped {
		t.Error("not skipped")
	}
	Require(t, true, "present") // returns
}

func TestSleepMarkerFindsOnlyItsProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc")
	}
	m1, m2 := SleepMarker(), SleepMarker()
	if m1 == m2 || strings.Contains(m1, m2) || strings.Contains(m2, m1) {
		t.Fatalf("markers %q and %q overlap", m1, m2)
	}
	cmd := exec.Command("sleep", m1)
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep:", err)
	}
	want := strconv.Itoa(cmd.Process.Pid) + ": sleep " + m1
	if got := ProcessesWith(m1); len(got) != 1 || got[0] != want {
		t.Errorf("ProcessesWith(%q) = %q, want [%q]", m1, got, want)
	}
	if got := ProcessesWith(m2); len(got) != 0 {
		t.Errorf("ProcessesWith(unused marker) = %q", got)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if got := ProcessesWith(m1); len(got) != 0 {
		t.Errorf("after the kill: %q", got)
	}
}
