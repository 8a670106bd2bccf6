package agentbe

import (
	"os"

	"github.com/agentbe/agent-backend/internal/replace"
)

// exchangeInto replaces the existing file target with tmp, both names in
// the directory of root, with replace.ByExchange (see there for why not
// rename): at 32 concurrent write_file calls, ext4's writeback inside a
// rename over a file was where requests waited. It reports false, having
// changed nothing, when that cannot be done; the caller then renames.
func exchangeInto(root *os.Root, tmp, target string) bool {
	d, err := root.Open(".")
	if err != nil {
		return false
	}
	defer d.Close()
	rc, err := d.SyscallConn()
	if err != nil {
		return false
	}
	done := false
	rc.Control(func(fd uintptr) { done = replace.ByExchange(int(fd), tmp, int(fd), target) })
	return done
}
