//go:build !linux

package procs

import "os"

// feedMax is what Feed writes before the reader starts; see feed_linux.go.
const feedMax = 4096

// Feed returns the read end of a pipe that yields data then EOF; see
// feed_linux.go (bwrap, its only user, is Linux-only).
func Feed(data []byte) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	if len(data) <= feedMax {
		_, err = w.Write(data)
		w.Close()
		if err != nil {
			r.Close()
			return nil, err
		}
		return r, nil
	}
	go func() {
		_, _ = w.Write(data)
		w.Close()
	}()
	return r, nil
}
