package agentbe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentbe/agent-backend/internal/migrate"
)

// MigrateOptions configures Migrate. Connect is required.
type MigrateOptions struct {
	// Connect returns a Remote for a shard (see ConnectFunc). Migrate
	// destroys the Remotes it got when it returns.
	Connect ConnectFunc
	// Journal is the path of a local file where the migration records its
	// progress, so that a re-run skips what was copied and verified. ""
	// keeps no journal: a re-run then compares each file with its copy by
	// hash, and refuses a tenant whose destination differs (see Overwrite).
	// The file is created (0600) and locked while Migrate runs.
	Journal string
	// Overwrite lets the migration replace destination content that differs
	// from the source although the journal does not say this migration
	// wrote it: the tenant's files on its new shard (written there through
	// a failover pool, or by a run whose journal is lost). Without it such
	// a tenant fails with ErrMigrationConflict and nothing of it is
	// replaced.
	Overwrite bool
	// DeleteSource removes a tenant's scope from its old shard once its
	// copy is complete and verified (files copied in earlier runs are
	// hashed again first). A tenant with entries that could not be copied
	// (see TenantResult.Unmovable) keeps its source. By default every
	// source is kept.
	DeleteSource bool
	// Parallel is how many tenants are copied at once; 0 means 1.
	Parallel int
	// Progress, when set, is told of each tenant's start, of every file,
	// and of its end. Calls come from the migrating goroutines, one at a
	// time.
	Progress func(MigrationProgress)
}

// MigrationEvent says what a MigrationProgress reports.
type MigrationEvent string

// Migration events.
const (
	// MigrationStarted: the tenant's source was listed (TotalFiles and
	// TotalBytes are known).
	MigrationStarted MigrationEvent = "started"
	// MigrationFile: a file was copied and verified, or found already
	// copied (Path).
	MigrationFile MigrationEvent = "file"
	// MigrationVerified: the tenant's copy is complete and verified.
	MigrationVerified MigrationEvent = "verified"
	// MigrationSourceDeleted: the tenant's source was removed.
	MigrationSourceDeleted MigrationEvent = "source-deleted"
	// MigrationFailed: the tenant failed (Err).
	MigrationFailed MigrationEvent = "failed"
)

// MigrationProgress reports a step of one tenant's migration.
type MigrationProgress struct {
	Event MigrationEvent
	Move  TenantMove
	Path  string // MigrationFile: the file, relative to the scope
	// Files and Bytes count the regular files (and their bytes) done so
	// far, copied or found already copied; TotalFiles and TotalBytes are the
	// source's.
	Files, TotalFiles int
	Bytes, TotalBytes int64
	Err               error // MigrationFailed
}

// TenantResult is what Migrate did for one tenant.
type TenantResult struct {
	Move TenantMove
	// Missing reports that the tenant has no directory on its old shard:
	// nothing to move.
	Missing bool
	// The source's entries: regular files (and their bytes), directories
	// (the scope itself included) and symbolic links.
	Files, Dirs, Links int
	Bytes              int64
	// CopiedFiles and CopiedBytes are what this run copied; the other
	// files were found already copied and verified.
	CopiedFiles int
	CopiedBytes int64
	// Unmovable lists the entries not copied, with why: named pipes,
	// sockets, devices, and links whose target the source daemon does not
	// show because it lies outside its workspace.
	Unmovable []string
	// Extra lists entries of the destination that the source lacks (kept).
	Extra []string
	// Verified reports that the copy is complete and equal to the source
	// (now, or when an earlier run moved the tenant).
	Verified bool
	// AlreadyMoved reports that an earlier run with the same journal moved
	// the tenant: it is not copied again (its copy may have changed since,
	// served by the new shard), only its source deleted if asked.
	AlreadyMoved bool
	// SourceDeleted reports that DeleteSource removed the source.
	SourceDeleted bool
	Err           error
	Elapsed       time.Duration
}

// MigrationReport is the outcome of Migrate, a result per planned tenant
// in the plan's order (those not reached when Migrate stopped early have
// Err set to the reason).
type MigrationReport struct {
	Tenants []TenantResult
}

// Errors of Migrate.
var (
	// ErrMigrationConflict: the destination holds content for the tenant
	// that differs from its source and that this migration did not write.
	ErrMigrationConflict = migrate.ErrConflict
	// ErrSourceChanged: the tenant's source changed while it was copied
	// (its clients were not stopped).
	ErrSourceChanged = migrate.ErrSourceChanged
	// ErrJournalBusy is returned by Migrate when another migration holds the
	// journal file.
	ErrJournalBusy = migrate.ErrJournalBusy
)

// Migrate copies every tenant of plan from its old shard to its new one
// over SFTP: directories, regular files (content, permission bits,
// modification time) and symbolic links (as links: a link is never
// followed, wherever it points). Each file is written to a temporary name
// beside its place, flushed, read back and compared with the source by size
// and SHA-256, and only then renamed into place; the source is checked
// unchanged before and after. Interrupted (ctx cancelled, the process
// killed), a re-run with the same Journal goes on where it stopped: files
// already copied are skipped, a file cut short is copied again. A tenant
// the journal records as moved is not copied again (the pool may serve it
// from its new shard already): a later run with DeleteSource removes its
// source, if that is still what was copied.
//
// Tenants must not change while they are copied; see docs/scaling.md for
// the procedure. Migrate returns the report and, when some tenant failed,
// an error joining theirs.
func Migrate(ctx context.Context, plan *MigrationPlan, opts MigrateOptions) (*MigrationReport, error) {
	if plan == nil {
		return nil, configErr("Migrate needs a plan", nil)
	}
	if opts.Connect == nil {
		return nil, configErr("MigrateOptions.Connect is required", nil)
	}
	seen := map[string]bool{}
	for _, m := range plan.Moves {
		// Two moves of one key, or of one directory, would race.
		for _, id := range []string{"key\x00" + m.Key, m.From + "\x00" + m.Scope, m.To + "\x00" + m.Scope} {
			if seen[id] {
				return nil, configErr(fmt.Sprintf("the plan moves tenant %q (scope %q) twice", m.Key, m.Scope), nil)
			}
			seen[id] = true
		}
		if _, err := cleanTenantPrefix(m.Scope); err != nil || m.Scope == "" {
			return nil, configErr(fmt.Sprintf("tenant %q: scope %q is not a clean relative path", m.Key, m.Scope), nil)
		}
		if m.From == "" || m.To == "" || m.From == m.To {
			return nil, configErr(fmt.Sprintf("tenant %q: moves from %q to %q", m.Key, m.From, m.To), nil)
		}
	}
	conns := newShardConns(opts.Connect)
	defer conns.close()
	mg, err := migrate.Open(migrate.Options{Journal: opts.Journal, Conn: conns.get,
		Overwrite: opts.Overwrite, DeleteSource: opts.DeleteSource, Progress: progressTo(opts.Progress)})
	if err != nil {
		return nil, err
	}
	defer mg.Close()

	report := &MigrationReport{Tenants: make([]TenantResult, len(plan.Moves))}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < max(opts.Parallel, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				report.Tenants[i] = tenantResult(mg.Tenant(ctx, migrate.Move(plan.Moves[i])))
			}
		}()
	}
	next := 0
feed:
	for ; next < len(plan.Moves); next++ {
		select {
		case work <- next:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	for i := next; i < len(plan.Moves); i++ {
		report.Tenants[i] = TenantResult{Move: plan.Moves[i], Err: ctx.Err()}
	}
	var errs []error
	for _, r := range report.Tenants {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("tenant %q (%s → %s): %w", r.Move.Key, r.Move.From, r.Move.To, r.Err))
		}
	}
	return report, errors.Join(errs...)
}

// progressTo adapts fn to the engine's progress reports.
func progressTo(fn func(MigrationProgress)) func(migrate.Progress) {
	if fn == nil {
		return nil
	}
	return func(p migrate.Progress) {
		fn(MigrationProgress{Event: MigrationEvent(p.Event), Move: TenantMove(p.Move), Path: p.Path,
			Files: p.Files, TotalFiles: p.TotalFiles, Bytes: p.Bytes, TotalBytes: p.TotalBytes, Err: p.Err})
	}
}

// tenantResult is the engine's result as the API reports it.
func tenantResult(r migrate.Result) TenantResult {
	return TenantResult{Move: TenantMove(r.Move), Missing: r.Missing, Files: r.Files, Dirs: r.Dirs, Links: r.Links,
		Bytes: r.Bytes, CopiedFiles: r.CopiedFiles, CopiedBytes: r.CopiedBytes, Unmovable: r.Unmovable, Extra: r.Extra,
		Verified: r.Verified, AlreadyMoved: r.AlreadyMoved, SourceDeleted: r.SourceDeleted, Err: r.Err, Elapsed: r.Elapsed}
}
