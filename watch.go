package agentbe

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbe/agent-backend/internal/watch"
)

// Watch errors, matched with errors.Is.
var (
	// ErrCursorTooOld: Watcher.Since was asked for changes that are no
	// longer kept (or a cursor of the feed that is ahead of it); list the
	// tree again and continue from Watcher.Cursor.
	ErrCursorTooOld = watch.ErrCursorTooOld
	// ErrWatchNotSupported: this platform (or backend) has no change feed.
	// Local and Scope feeds need Linux's inotify.
	ErrWatchNotSupported = watch.ErrNotSupported
	// ErrWatchLimit: the tree needs more watched directories than the feed,
	// its budget or the kernel allow.
	ErrWatchLimit = watch.ErrWatchLimit
	// ErrWatchEnded: the feed stopped: the watched directory was removed or
	// moved, the backend was destroyed, or the daemon's feed ended.
	ErrWatchEnded = errors.New("watch ended")
)

// ChangeKind is what happened to a path.
type ChangeKind string

// The kinds of change a Watcher reports.
const (
	// ChangeCreated: an entry appeared (created, moved in from outside the
	// watched tree, or found in a directory that appeared).
	ChangeCreated ChangeKind = "created"
	// ChangeWritten: a file's contents changed. Bursts of writes to one
	// file within a short window are reported once or twice, the last
	// report after the last write.
	ChangeWritten ChangeKind = "written"
	// ChangeRemoved: an entry is gone (deleted, or moved out of the tree).
	ChangeRemoved ChangeKind = "removed"
	// ChangeRenamed: the entry at OldPath is now at Path.
	ChangeRenamed ChangeKind = "renamed"
	// ChangeRescan: the feed could not follow everything below Path (the
	// kernel's queue overflowed, a flood, a cursor that was too old on
	// resume, a daemon feed that restarted). List that subtree again.
	ChangeRescan ChangeKind = "rescan"
)

// ChangeEvent is one change reported by a Watcher.
type ChangeEvent struct {
	// Seq numbers the events of a feed 1, 2, 3, ... without gaps; with the
	// feed's ID it is the cursor (Watcher.Cursor).
	Seq  uint64     `json:"seq"`
	Kind ChangeKind `json:"kind"`
	// Path is slash-separated and relative to the backend's root (the
	// scope's, for a Scope), "." for the root itself; never a host path.
	Path string `json:"path"`
	// OldPath is the former path of a renamed entry.
	OldPath string `json:"oldPath,omitempty"`
	// IsDir is set when the entry is a directory.
	IsDir bool `json:"isDir,omitempty"`
	// Symlink is set when the entry is a symbolic link (never followed).
	Symlink bool `json:"symlink,omitempty"`
	// Note explains a rescan.
	Note string `json:"note,omitempty"`
	// Time is when the feed published the event.
	Time time.Time `json:"time"`
}

// WatchOptions controls Watch. The zero value reports every change made
// after Watch returns, with the default bounds.
type WatchOptions struct {
	// Cursor resumes a watch: the value of Watcher.Cursor (or an SSE
	// Last-Event-ID of the daemon's watch route), "<feed>:<seq>". When the
	// feed is still running and keeps the events after seq, they are
	// reported first, so nothing is lost; otherwise the first event is a
	// rescan. "" starts with the changes made after Watch returns.
	Cursor string
	// Budget, when set, bounds the directories watched by every feed
	// opened with it (say, one tenant's); see NewWatchBudget. Feeds of the
	// same directory are shared only between watchers of the same budget.
	Budget *WatchBudget
}

// A WatchBudget is a number of watched directories shared by the feeds
// opened with it. A budget may have a parent (a scope's budget under its
// tenant's): every directory counts against both. Safe for concurrent use.
type WatchBudget struct{ b *watch.Budget }

// NewWatchBudget returns a budget of max directories (max > 0) under
// parent, which may be nil.
func NewWatchBudget(max int, parent *WatchBudget) *WatchBudget {
	var p *watch.Budget
	if parent != nil {
		p = parent.b
	}
	return &WatchBudget{b: watch.NewBudget(max, p)}
}

// Max returns the budget's size.
func (w *WatchBudget) Max() int { return w.b.Max() }

// Used returns the directories currently counted against the budget.
func (w *WatchBudget) Used() int { return w.b.Used() }

func (w *WatchBudget) inner() *watch.Budget {
	if w == nil {
		return nil
	}
	return w.b
}

// Watcher reports the changes below a directory of a workspace, in order,
// each with a sequence number; see Watch. Next is meant for one goroutine;
// Since, Cursor, ID and Close are safe for concurrent use.
type Watcher struct {
	src watchSource
}

// watchSource is a Watcher's implementation: a local feed or the daemon's
// route.
type watchSource interface {
	next(ctx context.Context) (ChangeEvent, error)
	since(after uint64) ([]ChangeEvent, error)
	cursor() (id string, seq uint64)
	close() error
}

// Next returns the next change, blocking until there is one or ctx is
// done. A rescan event means changes below its Path were not followed:
// list that subtree again. When the feed ends (the watched directory
// removed or moved, the backend destroyed) Next returns an error wrapping
// ErrWatchEnded (after Close, too).
func (w *Watcher) Next(ctx context.Context) (ChangeEvent, error) { return w.src.next(ctx) }

// Since returns the events after sequence number after that the feed
// still keeps, oldest first, without moving the Watcher's cursor. When
// the events just after it are no longer kept, it returns an error
// wrapping ErrCursorTooOld. A Remote's Watcher answers from the events it
// received.
func (w *Watcher) Since(after uint64) ([]ChangeEvent, error) { return w.src.since(after) }

// ID identifies the feed: different for every feed, even one of the same
// directory started again. A sequence number means something only with it.
func (w *Watcher) ID() string { id, _ := w.src.cursor(); return id }

// Cursor returns "<feed>:<seq>", seq being the last event Next returned
// (or where the Watcher started): the value of WatchOptions.Cursor that
// resumes after it.
func (w *Watcher) Cursor() string {
	id, seq := w.src.cursor()
	return FormatWatchCursor(id, seq)
}

// Close stops the Watcher; a blocked Next returns. Idempotent.
func (w *Watcher) Close() error { return w.src.close() }

// FormatWatchCursor returns the cursor of event seq of feed id.
func FormatWatchCursor(id string, seq uint64) string { return id + ":" + strconv.FormatUint(seq, 10) }

// ParseWatchCursor splits a cursor made by FormatWatchCursor.
func ParseWatchCursor(c string) (id string, seq uint64, err error) {
	i := strings.LastIndexByte(c, ':')
	if i <= 0 {
		return "", 0, badWatchCursor(c)
	}
	seq, err = strconv.ParseUint(c[i+1:], 10, 64)
	if err != nil {
		return "", 0, badWatchCursor(c)
	}
	return c[:i], seq, nil
}

// badWatchCursor refuses cursor c, quoting at most its first 64 bytes:
// a client's made-up cursor (up to the daemon's header limit) is not
// echoed whole.
func badWatchCursor(c string) error {
	if len(c) > 64 {
		return fmt.Errorf("%w: watch cursor %q… (%d bytes) is not <feed>:<seq>", ErrInvalidConfig, c[:64], len(c))
	}
	return fmt.Errorf("%w: watch cursor %q is not <feed>:<seq>", ErrInvalidConfig, c)
}

// Watch starts reporting the changes made below the directory p of b's
// workspace (recursively), whoever makes them: this process, MCP tools,
// SFTP, the daemon's file API, commands run in the workspace, or the host
// itself. Paths are relative to b's root; nothing outside it (or outside
// a Scope) is ever reported, and links are entries, never followed.
//
// Local backends and their scopes use Linux's inotify (elsewhere Watch
// fails with ErrWatchNotSupported); a Remote watches over the daemon's
// GET /v1/fs/watch route and reconnects by itself, resuming from its
// cursor so that no event is lost while the cursor is still within the
// daemon's window (otherwise it reports a rescan). A Memory backend has
// no change feed (NOT_IMPLEMENTED). See docs/watch.md.
//
// Watchers of the same directory (and budget) share one feed, which
// keeps its recent events (4096, and 1 MiB) for resuming, and lingers 30
// seconds after its last Watcher closed so that a reconnecting client
// resumes. The Watcher is tracked by b: Destroy closes it.
func Watch(ctx context.Context, b Backend, p string, opts WatchOptions) (*Watcher, error) {
	switch v := b.(type) {
	case *Local:
		return v.watch(ctx, p, opts)
	case *Scope:
		if err := v.alive("watch", p); err != nil {
			return nil, err
		}
		if err := v.ensureRoot(ctx); err != nil {
			return nil, err
		}
		return Watch(ctx, v.inner, p, opts)
	case *Remote:
		return v.watch(ctx, p, opts)
	}
	return nil, &Error{Code: CodeNotImplemented, Op: "watch", Path: p, Backend: b.Kind(),
		Err: errors.Join(ErrNotImplemented, ErrWatchNotSupported)}
}

// watchHubs holds the Hub of each Local workspace (keyed by its
// lifecycle, which its scope views share), created on the first Watch and
// closed by Destroy.
var watchHubs sync.Map // *lifecycle → *watch.Hub

// watchConfig bounds the feeds of the hubs made from now on (nil: the
// defaults); tests shrink it.
var watchConfig atomic.Pointer[watch.Config]

func (l *Local) watchHub() (*watch.Hub, error) {
	if h, ok := watchHubs.Load(l.life); ok {
		return h.(*watch.Hub), nil
	}
	h := watch.NewHub(watchConfig.Load())
	if got, loaded := watchHubs.LoadOrStore(l.life, h); loaded {
		h.Close()
		return got.(*watch.Hub), nil
	}
	life := l.life
	life.track(closerFunc(func() error {
		watchHubs.Delete(life)
		return h.Close()
	}))
	if life.dead() {
		return nil, ErrDestroyed
	}
	return h, nil
}

func (l *Local) watch(ctx context.Context, p string, opts WatchOptions) (*Watcher, error) {
	fail := func(err error) (*Watcher, error) {
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		code := CodeReadFailed
		switch {
		case errors.Is(err, ErrPathEscape):
			code = CodePathEscape
		case errors.Is(err, ErrDestroyed):
			code = CodeDestroyed
		case errors.Is(err, ErrWatchNotSupported):
			code = CodeNotImplemented
			err = errors.Join(ErrNotImplemented, err)
		case errors.Is(err, ErrInvalidConfig):
			code = CodeInvalidConfiguration
		}
		return nil, &Error{Code: code, Op: "watch", Path: p, Backend: KindLocal, Err: scrubPath(err, p)}
	}
	var wantID string
	var wantSeq uint64
	if opts.Cursor != "" {
		var err error
		if wantID, wantSeq, err = ParseWatchCursor(opts.Cursor); err != nil {
			return fail(err)
		}
	}
	root, _, rel, err := l.at(ctx, "watch", p)
	if err != nil {
		return nil, err
	}
	hub, err := l.watchHub()
	if err != nil {
		return fail(err)
	}
	feed, err := hub.Open(root, rel, opts.Budget.inner())
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = &fs.PathError{Op: "watch", Path: p, Err: fs.ErrNotExist}
		} else if errors.Is(err, watch.ErrSymlink) {
			err = &fs.PathError{Op: "watch", Path: p, Err: &textError{msg: watch.ErrSymlink.Error(), is: ErrPathEscape}}
		}
		return fail(err)
	}
	w := &localWatch{feed: feed, prefix: rel, done: make(chan struct{})}
	switch {
	case opts.Cursor == "":
		w.seq = feed.Seq()
	case wantID == feed.ID():
		w.seq = wantSeq
	default:
		w.seq = feed.Seq()
		w.pending = append(w.pending, ChangeEvent{Seq: w.seq, Kind: ChangeRescan, Path: w.join("."),
			Note: "the feed of this cursor is gone: changes may have been missed", Time: time.Now()})
	}
	w.untrack = l.life.track(closerFunc(w.close))
	return &Watcher{src: w}, nil
}

// localWatch is a Watcher on a feed of this process.
type localWatch struct {
	feed    *watch.Feed
	prefix  string // the watched directory relative to the backend root
	untrack func()
	done    chan struct{}
	once    sync.Once

	mu      sync.Mutex
	seq     uint64
	buf     []watch.Event
	pending []ChangeEvent
	ended   error
}

// join maps a path relative to the watched directory to one relative to
// the backend root.
func (w *localWatch) join(p string) string {
	switch {
	case w.prefix == ".":
		return p
	case p == ".":
		return w.prefix
	}
	return w.prefix + "/" + p
}

func (w *localWatch) convert(ev watch.Event) ChangeEvent {
	c := ChangeEvent{Seq: ev.Seq, Path: w.join(ev.Path), IsDir: ev.Kind == watch.KindDir,
		Symlink: ev.Kind == watch.KindSymlink, Note: ev.Note, Time: ev.Time}
	switch ev.Op {
	case watch.Created:
		c.Kind = ChangeCreated
	case watch.Written:
		c.Kind = ChangeWritten
	case watch.Removed:
		c.Kind = ChangeRemoved
	case watch.Renamed:
		c.Kind = ChangeRenamed
		c.OldPath = w.join(ev.OldPath)
	default:
		c.Kind = ChangeRescan
	}
	return c
}

func (w *localWatch) next(ctx context.Context) (ChangeEvent, error) {
	for {
		w.mu.Lock()
		if w.ended != nil {
			err := w.ended
			w.mu.Unlock()
			return ChangeEvent{}, err
		}
		if len(w.pending) > 0 {
			ev := w.pending[0]
			w.pending = w.pending[1:]
			w.mu.Unlock()
			return ev, nil
		}
		if len(w.buf) > 0 {
			ev := w.buf[0]
			w.buf = w.buf[1:]
			w.seq = ev.Seq
			if ev.Op == watch.Ended {
				w.ended = fmt.Errorf("agentbe: watch: %w: %s", ErrWatchEnded, ev.Note)
				if reason := w.feed.Err(); reason != nil {
					w.ended = fmt.Errorf("agentbe: watch: %w: %w", ErrWatchEnded, reason)
				}
				w.mu.Unlock()
				continue
			}
			w.mu.Unlock()
			return w.convert(ev), nil
		}
		after := w.seq
		w.mu.Unlock()
		evs, err := w.feed.Wait(ctx, after, 256)
		switch {
		case errors.Is(err, watch.ErrCursorTooOld):
			// Go on with the oldest event still kept: the rescan covers
			// what was lost, nothing kept is skipped.
			w.mu.Lock()
			w.seq = w.feed.Stats().Oldest - 1
			w.pending = append(w.pending, ChangeEvent{Seq: w.seq, Kind: ChangeRescan, Path: w.join("."),
				Note: "cursor too old: changes were missed", Time: time.Now()})
			w.mu.Unlock()
		case err != nil && ctx.Err() != nil:
			return ChangeEvent{}, err
		case err != nil:
			return ChangeEvent{}, fmt.Errorf("agentbe: watch: %w: %w", ErrWatchEnded, err)
		default:
			w.mu.Lock()
			w.buf = append(w.buf[:0], evs...)
			w.mu.Unlock()
		}
	}
}

func (w *localWatch) since(after uint64) ([]ChangeEvent, error) {
	evs, err := w.feed.Since(after)
	if err != nil {
		return nil, fmt.Errorf("agentbe: watch: %w", err)
	}
	out := make([]ChangeEvent, 0, len(evs))
	for _, ev := range evs {
		if ev.Op != watch.Ended {
			out = append(out, w.convert(ev))
		}
	}
	return out, nil
}

func (w *localWatch) cursor() (string, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.feed.ID(), w.seq
}

func (w *localWatch) close() error {
	w.once.Do(func() {
		close(w.done)
		w.feed.Close()
		if w.untrack != nil {
			w.untrack()
		}
	})
	return nil
}
