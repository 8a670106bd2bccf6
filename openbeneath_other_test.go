//go:build !linux

package agentbe

import "testing"

// withoutOpenat2: there is no openat2 path here, only the os.Root one.
func withoutOpenat2(t *testing.T) {}
