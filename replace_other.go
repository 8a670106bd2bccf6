//go:build !linux

package agentbe

import "os"

// exchangeInto is Linux-only (renameat2); elsewhere the caller renames.
func exchangeInto(root *os.Root, tmp, target string) bool { return false }
