// Package testenv holds what the tests of several packages share: the rule
// for a missing prerequisite and free loopback ports. Only tests import it.
package testenv

import (
	"net"
	"os"
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

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
