//go:build !unix

package agentbe

// openNoWait is or-ed into the flags of every open of a workspace entry;
// see openflags_unix.go. Elsewhere there is nothing to add.
const openNoWait = 0

// openDirOnly makes an open fail unless the entry is a directory, where the
// system has such a flag; see openflags_unix.go.
const openDirOnly = 0
