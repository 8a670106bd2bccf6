//go:build !linux

package fstools

import (
	"io/fs"
	"time"
)

func sysTimes(fs.FileInfo) (created, accessed time.Time, ok bool) {
	return time.Time{}, time.Time{}, false
}
