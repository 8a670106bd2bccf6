// Package migrate is the machinery behind agentbe.Migrate: the copy of one
// tenant's directory from a shard to another over SFTP (directories,
// regular files written to a temporary name, read back and compared by
// size and SHA-256 before they are renamed into place, symbolic links as
// links), the journal that lets a re-run go on where an interrupted one
// stopped, and its lock. The root package keeps the API (plans, options,
// reports) and opens the shards' SFTP sessions through its Remotes; this
// package sees only those sessions (Conn).
package migrate

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Move is one tenant whose shard changes (agentbe.TenantMove).
type Move struct {
	Key   string // the Pool key
	Scope string // its directory, relative to each daemon's workspace
	From  string // its shard under the old list
	To    string // its shard under the new list
}

// Result is what a Run did for one tenant; the fields are those of
// agentbe.TenantResult, which documents them.
type Result struct {
	Move               Move
	Missing            bool
	Files, Dirs, Links int
	Bytes              int64
	CopiedFiles        int
	CopiedBytes        int64
	Unmovable          []string
	Extra              []string
	Verified           bool
	AlreadyMoved       bool
	SourceDeleted      bool
	Err                error
	Elapsed            time.Duration
}

// Event says what a Progress reports (agentbe.MigrationEvent).
type Event string

// Events, as agentbe.MigrationEvent names them.
const (
	EventStarted       Event = "started"
	EventFile          Event = "file"
	EventVerified      Event = "verified"
	EventSourceDeleted Event = "source-deleted"
	EventFailed        Event = "failed"
)

// Progress reports a step of one tenant's migration
// (agentbe.MigrationProgress).
type Progress struct {
	Event             Event
	Move              Move
	Path              string
	Files, TotalFiles int
	Bytes, TotalBytes int64
	Err               error
}

// Errors of a Run.
var (
	// ErrConflict: the destination holds content for the tenant that
	// differs from its source and that this migration did not write.
	ErrConflict = errors.New("agentbe: the destination already holds different content for the tenant")
	// ErrSourceChanged: the tenant's source changed while it was copied.
	ErrSourceChanged = errors.New("agentbe: the source changed during the migration (stop the tenant's clients first)")
)

// Options configures a Run.
type Options struct {
	// Journal is the path of the journal file; "" keeps none.
	Journal string
	// Conn returns the live SFTP session of a shard, connecting (again)
	// when needed.
	Conn func(ctx context.Context, shard string) (*Conn, error)
	// Overwrite and DeleteSource are agentbe.MigrateOptions'.
	Overwrite, DeleteSource bool
	// Progress, when set, is called one call at a time.
	Progress func(Progress)
}

// Run is one migration: its options and its open journal. Its Tenant
// method may be called from several goroutines at once, for different
// tenants.
type Run struct {
	opts    Options
	journal *migrationJournal
	mu      sync.Mutex // serializes Progress
}

// Open starts a Run, reading and locking its journal; a journal held by
// another migration is ErrJournalBusy.
func Open(opts Options) (*Run, error) {
	j, err := openJournal(opts.Journal)
	if err != nil {
		return nil, err
	}
	return &Run{opts: opts, journal: j}, nil
}

// Close closes the journal.
func (mg *Run) Close() error { return mg.journal.close() }

func (mg *Run) conn(ctx context.Context, shard string) (*Conn, error) {
	return mg.opts.Conn(ctx, shard)
}

func (mg *Run) progress(p Progress) {
	if mg.opts.Progress == nil {
		return
	}
	mg.mu.Lock()
	defer mg.mu.Unlock()
	mg.opts.Progress(p)
}

// Tenant migrates one tenant and reports what it did; a failure is the
// result's Err (and a progress event).
func (mg *Run) Tenant(ctx context.Context, m Move) Result {
	start := time.Now()
	res := Result{Move: m}
	err := mg.copyTenant(ctx, m, &res)
	res.Elapsed = time.Since(start)
	if err != nil {
		res.Err = err
		mg.progress(Progress{Event: EventFailed, Move: m, Err: err,
			TotalFiles: res.Files, TotalBytes: res.Bytes})
	}
	return res
}
