//go:build !unix

package agentbe

// processGone is never sure elsewhere (bwrap runs on Linux only).
func processGone(int) bool { return false }
