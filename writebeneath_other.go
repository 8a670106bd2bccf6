//go:build !linux

package agentbe

import (
	"context"
	"os"
)

// writeBeneath has no single-call confined open to use here (see
// openBeneath): the caller takes the os.Root path.
func writeBeneath(ctx context.Context, dir *os.File, rel string, data []byte, create bool) (bool, error) {
	return false, nil
}
