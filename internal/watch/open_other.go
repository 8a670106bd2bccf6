//go:build !linux

package watch

import "os"

func openWatchDir(root *os.Root, dir string) (*target, error) {
	return nil, ErrNotSupported
}

func startFeed(tg *target, cfg *Config) (*feed, error) {
	tg.close()
	return nil, ErrNotSupported
}
