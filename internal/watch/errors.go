package watch

import "errors"

// Sentinel errors, matched with errors.Is.
var (
	// ErrNotSupported: this platform has no change feed (Linux only).
	ErrNotSupported = errors.New("watch: change feed not supported on this platform")
	// ErrCursorTooOld: the sequence number asked for is no longer in the
	// feed's window (or was never issued by this feed); list the tree
	// again and resume from the feed's current sequence number.
	ErrCursorTooOld = errors.New("watch: cursor too old, rescan needed")
	// ErrClosed: the feed (or hub) was closed.
	ErrClosed = errors.New("watch: feed closed")
	// ErrRootGone: the watched directory was removed, moved, or its file
	// system unmounted; the feed has ended.
	ErrRootGone = errors.New("watch: watched directory removed or moved")
	// ErrWatchLimit: the directory tree needs more watches than the
	// feed's limit, its budget or the kernel allow.
	ErrWatchLimit = errors.New("watch: watch limit reached")
	// ErrNotDir: the path to watch is not a directory.
	ErrNotDir = errors.New("watch: not a directory")
	// ErrSymlink: the path to watch goes through a symbolic link, which
	// a feed never follows.
	ErrSymlink = errors.New("watch: path goes through a symbolic link")
)
