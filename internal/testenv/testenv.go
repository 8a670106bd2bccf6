// Package testenv holds what the tests of several packages share: the rule
// for a missing prerequisite and free loopback ports. Only tests import it.
package testenv

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Require returns when ok. Otherwise it fails the test when CI is set
// (.ci/run installs every prerequisite, so there a missing one is a bug)
// and skips it elsewhere; what names the prerequisite.
func Require(t testing.TB, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing (required when CI is set; .ci/run installs it)", what)
	}
	t.Skipf("%s is missing; run bash .ci/run", what)
}

// FreePort returns a loopback TCP port that was free a moment ago, for a
// server the test starts (sshd, a daemon binary) that must be told its
// port. It picks below the kernel's ephemeral range when it can: a port
// from that range (what ":0" gives) is the next one handed out to any
// outgoing connection on the machine, and tests running in parallel
// connect all the time, so between this check and the server's bind it
// was sometimes taken ("Address already in use").
func FreePort(t testing.TB) int {
	t.Helper()
	lo := ephemeralLow()
	for range 100 {
		if lo <= firstPort+1000 {
			break
		}
		port := firstPort + rand.IntN(lo-firstPort)
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			ln.Close()
			return port
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// firstPort is the lowest port FreePort picks, above the well-known and
// most registered services' ports.
const firstPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return lo
}
