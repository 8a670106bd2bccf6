//go:build !linux

// Package pty allocates pseudo-terminals (no cgo) for the processes the
// root package starts in PTY mode.
package pty

import (
	"errors"
	"os"
)

// Supported reports whether this platform can allocate a pty.
const Supported = false

// Open fails: no pty support on this platform.
func Open() (master, slave *os.File, err error) {
	return nil, nil, errors.New("pty: not supported on this platform")
}

// SetSize does nothing on this platform.
func SetSize(*os.File, int, int) error { return nil }

// ForegroundGroup reports no group on this platform.
func ForegroundGroup(*os.File) int { return 0 }
