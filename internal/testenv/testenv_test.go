package testenv

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortIsFree(t *testing.T) {
	p := FreePort(t)
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("port %d not free: %v", p, err)
	}
	ln.Close()
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
