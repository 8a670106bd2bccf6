//go:build !linux

package procs

// ReapOrphans does nothing: only Linux has child subreapers (and bwrap).
func ReapOrphans() error { return nil }

// ReapedOrphans is always 0 where ReapOrphans does nothing.
func ReapedOrphans() uint64 { return 0 }
