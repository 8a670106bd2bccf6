//go:build linux

package agentbe

import "golang.org/x/sys/unix"

// openPin opens an entry only to hold a reference to it (see
// releaseLater): no permission on the file is needed and nothing is read.
const openPin = unix.O_PATH
