//go:build !linux

package agentbe

import "os"

// pipeWith returns the read end of a pipe that yields data then EOF; see
// exec_feed_linux.go (bwrap, its only user, is Linux-only).
func pipeWith(data []byte) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	if len(data) <= pipeFeedMax {
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
