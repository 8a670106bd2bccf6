//go:build !linux

package watch

import "os"

func openWatchDir(root *os.Root, dir string) (*os.File, uint64, uint64, error) {
	return nil, 0, 0, ErrNotSupported
}

func startFeed(base *os.File, dev, ino uint64, cfg *Config) (*feed, error) {
	base.Close()
	return nil, ErrNotSupported
}
