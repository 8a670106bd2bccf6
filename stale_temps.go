package agentbe

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/agentbe/agent-backend/internal/beneath"
	"github.com/agentbe/agent-backend/internal/wspath"
)

// Defaults of StaleTempOptions.
const (
	// DefaultStaleTempAge is how long a temporary file must have been left
	// unmodified to count as stale: a writer at work keeps its file's time
	// fresh, and ten minutes without a byte is no transfer still going.
	DefaultStaleTempAge = 10 * time.Minute
	// DefaultStaleTempScan bounds the directory entries one scan examines.
	DefaultStaleTempScan = 1 << 20
	// staleTempDepth bounds the directories a scan descends into (each
	// level holds two descriptors while below it).
	staleTempDepth = 64
)

// StaleTempOptions bounds RemoveStaleTemps. The zero value uses the
// defaults.
type StaleTempOptions struct {
	// OlderThan is the minimum age (since the last modification) of a
	// file removed; zero means DefaultStaleTempAge.
	OlderThan time.Duration
	// MaxEntries bounds the directory entries examined; zero means
	// DefaultStaleTempScan.
	MaxEntries int
}

// StaleTempResult reports what RemoveStaleTemps did.
type StaleTempResult struct {
	Removed   int  // temporary files removed
	Scanned   int  // directory entries examined
	Truncated bool // the scan stopped at MaxEntries (or at the depth bound)
}

// RemoveStaleTemps removes the temporary files that atomic writes leave
// behind when they are killed mid-way (Write and Create of a Local, and of
// a Remote through a daemon, write a hidden sibling and rename it over the
// target): regular files named exactly ".<name>.<13 base-36 digits>.tmp"
// whose last modification is older than opts.OlderThan. Nothing else is
// touched. The workspace is walked through its *os.Root without following
// any symbolic link (a link, even one named like a temporary file, is
// neither followed nor removed), down to 64 levels and at most
// opts.MaxEntries entries. It stops early when ctx is done, with ctx's
// error.
func (l *Local) RemoveStaleTemps(ctx context.Context, opts StaleTempOptions) (StaleTempResult, error) {
	var res StaleTempResult
	if err := l.alive("remove-stale-temps", "."); err != nil {
		return res, err
	}
	r, _, err := l.jail.get()
	if err != nil {
		return res, err
	}
	if opts.OlderThan <= 0 {
		opts.OlderThan = DefaultStaleTempAge
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultStaleTempScan
	}
	sw := &staleSweep{ctx: ctx, cutoff: time.Now().Add(-opts.OlderThan), max: opts.MaxEntries, res: &res}
	err = sw.dir(r, 0)
	if errors.Is(err, errSweepFull) {
		res.Truncated, err = true, nil
	}
	return res, err
}

var errSweepFull = errors.New("scan bound reached")

type staleSweep struct {
	ctx    context.Context
	cutoff time.Time
	max    int
	res    *StaleTempResult
}

// dir sweeps the directory d (depth levels below the workspace root).
func (sw *staleSweep) dir(d *os.Root, depth int) error {
	f, err := d.Open(".")
	if err != nil {
		return nil // gone or unreadable: nothing to sweep there
	}
	defer f.Close()
	for {
		ents, rerr := f.ReadDir(256)
		for _, e := range ents {
			if err := sw.ctx.Err(); err != nil {
				return err
			}
			if sw.res.Scanned >= sw.max {
				return errSweepFull
			}
			sw.res.Scanned++
			switch t := e.Type(); {
			case t.IsDir():
				if depth+1 >= staleTempDepth {
					sw.res.Truncated = true
					continue
				}
				sub, err := wspath.OpenNoFollow(d, e.Name())
				if err != nil {
					continue // replaced by a link or removed meanwhile
				}
				err = sw.dir(sub, depth+1)
				sub.Close()
				if err != nil {
					return err
				}
			case t.IsRegular() && beneath.IsTempName(e.Name()):
				fi, err := d.Lstat(e.Name())
				if err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(sw.cutoff) {
					if d.Remove(e.Name()) == nil {
						sw.res.Removed++
					}
				}
			}
		}
		if rerr != nil {
			return nil // the end, or a directory that fails to list: skipped
		}
	}
}
