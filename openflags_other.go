//go:build !unix

package agentbe

// openNoWait is or-ed into the flags of every open of a workspace entry;
// see openflags_unix.go. Elsewhere there is nothing to add.
const openNoWait = 0
