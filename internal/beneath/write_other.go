//go:build !linux

package beneath

import (
	"context"
	"os"
)

// Write has no single-call confined open to use here (see Open): the
// caller takes the os.Root path.
func Write(ctx context.Context, dir *os.File, rel string, data []byte, create bool) (bool, error) {
	return false, nil
}
