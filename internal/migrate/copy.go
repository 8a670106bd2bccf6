package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/agentbe/agent-backend/sftpjail"
)

// TempPrefix starts the name of a file being copied: it is renamed
// into place once verified. A name with it left behind by an interrupted
// run is removed by the next one.
const TempPrefix = ".agentbe-migrate-"

// CopiedHook, set by tests, runs when a file's content has been
// written to its temporary name, before it is verified.
var CopiedHook func(m Move, rel string)

// RenameHook, set by tests, runs before a verified file is renamed into
// place.
var RenameHook func(m Move, rel string)

// statusOpUnsupported is SFTP's SSH_FX_OP_UNSUPPORTED.
const statusOpUnsupported = 8

// srcEntry is an entry of a tenant's source tree.
type srcEntry struct {
	rel string // relative to the scope; "." is the scope itself
	fi  fs.FileInfo
}

// tenantCopy is the migration of one tenant.
type tenantCopy struct {
	mg       *Run
	m        Move
	res      *Result
	src, dst *Conn
	// resumed: the journal says this migration started the tenant in an
	// earlier run, so destination content that differs is ours to replace.
	resumed bool
	// checked are the files found copied by the journal, whose copies are
	// hashed again before the source is deleted.
	// names are the source's entries by directory.
	names map[string]map[string]fs.FileInfo
	mu    sync.Mutex // guards what the file goroutines change below and in res
	// skipped are the entries not copied (see agentbe.TenantResult.Unmovable).
	skipped map[string]bool
	checked []journalRecord
	files   int
	bytes   int64
}

func (tc *tenantCopy) srcPath(rel string) string { return tc.src.Path(path.Join(tc.m.Scope, rel)) }
func (tc *tenantCopy) dstPath(rel string) string { return tc.dst.Path(path.Join(tc.m.Scope, rel)) }
func (tc *tenantCopy) mayReplace() bool          { return tc.resumed || tc.mg.opts.Overwrite }

func (tc *tenantCopy) conflict(rel, what string) error {
	return fmt.Errorf("%w: %q on %s %s (drain the tenant and inspect both copies; Overwrite replaces it)",
		ErrConflict, path.Join(tc.m.Scope, rel), tc.m.To, what)
}

// copyTenant copies m's scope and verifies the copy; on success with
// DeleteSource it removes the source.
func (mg *Run) copyTenant(ctx context.Context, m Move, res *Result) error {
	src, err := mg.conn(ctx, m.From)
	if err != nil {
		return err
	}
	dst, err := mg.conn(ctx, m.To)
	if err != nil {
		return err
	}
	jt := mg.journal.tenant(m)
	tc := &tenantCopy{mg: mg, m: m, res: res, src: src, dst: dst, resumed: jt.begun}
	if err := CheckDirChain(ctx, src, m.Scope, false); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			res.Missing, res.Verified, res.SourceDeleted, res.AlreadyMoved = true, true, jt.deleted, jt.done
			return nil
		}
		return fmt.Errorf("source on %s: %w", m.From, err)
	}
	entries, err := tc.scan(ctx)
	if err != nil {
		return err
	}
	tc.count(entries)
	if jt.done {
		return tc.movedEarlier(ctx, entries, jt)
	}
	mg.progress(Progress{Event: EventStarted, Move: m, TotalFiles: res.Files, TotalBytes: res.Bytes})
	if !jt.begun {
		if err := mg.journal.record(journalRecord{Op: "begin", From: m.From, To: m.To, Key: m.Key}, true); err != nil {
			return err
		}
	}
	if err := CheckDirChain(ctx, dst, m.Scope, true); err != nil {
		return fmt.Errorf("destination on %s: %w", m.To, err)
	}
	return tc.copyEntries(ctx, entries)
}

// migrateFileWorkers is how many files of a tenant are copied at once: the
// flush and the read-back of one overlap with the transfer of others.
const migrateFileWorkers = 4

// copyAll copies entries in order: directories and links at once (a
// directory before what it holds), regular files by migrateFileWorkers
// goroutines. The first failure stops the rest.
func (tc *tenantCopy) copyAll(ctx context.Context, entries []srcEntry) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, migrateFileWorkers)
	fail := func(err error) { cancel(err) } // the first cause sticks
	for _, e := range entries {
		if ctx.Err() != nil {
			break
		}
		var err error
		mode := e.fi.Mode()
		switch {
		case e.rel == ".":
			err = tc.writableDir(ctx, e.rel)
		case mode.IsDir():
			err = tc.copyDir(ctx, e)
		case mode.IsRegular():
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if err := tc.copyFile(ctx, e); err != nil {
					fail(err)
				}
			}()
		case mode&fs.ModeSymlink != 0:
			err = tc.copyLink(ctx, e)
		default:
			tc.unmovable(e.rel, fmt.Sprintf("%s (%s: not copied)", e.rel, kindOf(mode)))
		}
		if err != nil {
			fail(err)
		}
	}
	wg.Wait()
	return context.Cause(ctx)
}

// unmovable lists the entry rel, which is not copied, saying why.
func (tc *tenantCopy) unmovable(rel, what string) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.skipped == nil {
		tc.skipped = map[string]bool{}
	}
	tc.skipped[rel] = true
	tc.res.Unmovable = append(tc.res.Unmovable, what)
}

// index fills tc.names.
func (tc *tenantCopy) index(entries []srcEntry) {
	tc.names = map[string]map[string]fs.FileInfo{}
	for _, e := range entries {
		if e.rel == "." {
			continue
		}
		dir := path.Dir(e.rel)
		if tc.names[dir] == nil {
			tc.names[dir] = map[string]fs.FileInfo{}
		}
		tc.names[dir][path.Base(e.rel)] = e.fi
	}
}

// tempFor is the temporary name of rel's copy: TempName's, or, when
// the source has an entry of that name beside rel, a variant it has not.
func (tc *tenantCopy) tempFor(rel string) string {
	dir, base := path.Dir(rel), path.Base(rel)
	name := path.Base(TempName(rel))
	for i := 1; tc.names[dir][name] != nil; i++ {
		name = path.Base(TempName(fmt.Sprintf("%s/%s\x00%d", dir, base, i)))
	}
	return tc.dstPath(path.Join(dir, name))
}

// count fills the result's counts of the source's entries.
func (tc *tenantCopy) count(entries []srcEntry) {
	res := tc.res
	for _, e := range entries {
		switch {
		case e.fi.IsDir():
			res.Dirs++
		case e.fi.Mode().IsRegular():
			res.Files++
			res.Bytes += e.fi.Size()
		case e.fi.Mode()&fs.ModeSymlink != 0:
			res.Links++
		}
	}
}

// copyEntries copies the source's entries, verifies the copy and records
// the tenant done; with DeleteSource it then removes the source.
func (tc *tenantCopy) copyEntries(ctx context.Context, entries []srcEntry) error {
	mg, m, res := tc.mg, tc.m, tc.res
	tc.index(entries)
	if err := tc.copyAll(ctx, entries); err != nil {
		return err
	}
	if err := tc.extras(ctx, entries); err != nil {
		return err
	}
	// Directories last, deepest first: their permission bits (which may
	// forbid writing) and modification times (which every entry made in
	// them changed).
	for i := len(entries) - 1; i >= 0; i-- {
		if e := entries[i]; e.fi.IsDir() {
			if err := tc.setMeta(ctx, tc.dstPath(e.rel), e.fi); err != nil {
				return err
			}
		}
	}
	again, err := tc.scan(ctx)
	if err != nil {
		return err
	}
	if rel, ok := sameTree(entries, again); !ok {
		return fmt.Errorf("%w: %q", ErrSourceChanged, path.Join(m.Scope, rel))
	}
	done := journalRecord{Op: "done", From: m.From, To: m.To, Key: m.Key, Files: res.Files, Entries: len(entries),
		Unmovable: len(res.Unmovable)}
	if err := mg.journal.record(done, true); err != nil {
		return err
	}
	res.Verified = true
	mg.progress(Progress{Event: EventVerified, Move: m, Files: tc.files, TotalFiles: res.Files,
		Bytes: tc.bytes, TotalBytes: res.Bytes})
	if mg.opts.DeleteSource {
		return tc.deleteSource(ctx)
	}
	return nil
}

// movedEarlier handles a tenant an earlier run moved: its copy was verified
// then and may have changed since (the pool may serve the tenant from its
// new shard already), so it is neither copied nor compared again. With
// DeleteSource its source is deleted if it is still what was copied: the
// same entries, every regular file with the size and modification time
// recorded.
func (tc *tenantCopy) movedEarlier(ctx context.Context, entries []srcEntry, jt journalTenant) error {
	res := tc.res
	res.AlreadyMoved, res.Verified = true, true
	if jt.doneRec.Unmovable > 0 {
		res.Unmovable = append(res.Unmovable, fmt.Sprintf("%d entries were not copied (listed by the run that moved the tenant)", jt.doneRec.Unmovable))
	}
	if !tc.mg.opts.DeleteSource || len(res.Unmovable) > 0 {
		return nil
	}
	changed := len(entries) != jt.doneRec.Entries || res.Files != jt.doneRec.Files
	for _, e := range entries {
		if changed {
			break
		}
		if e.fi.Mode().IsRegular() {
			rec, ok := tc.mg.journal.file(tc.m, e.rel)
			changed = !ok || !sameSource(rec, e.fi)
		}
	}
	if changed {
		return fmt.Errorf("%w since an earlier run moved it; its source is kept and its copy untouched (a new journal, with Overwrite, copies it again)",
			ErrSourceChanged)
	}
	return tc.deleteSource(ctx)
}

// scan lists the source tree, directories before their entries, each
// directory's entries by name. Links are listed, never followed.
func (tc *tenantCopy) scan(ctx context.Context) ([]srcEntry, error) {
	root, err := tc.src.SFTP.Lstat(ctx, tc.srcPath("."))
	if err != nil {
		return nil, fmt.Errorf("source on %s: %w", tc.m.From, err)
	}
	if !root.IsDir() {
		return nil, fmt.Errorf("source on %s: %q %w", tc.m.From, tc.m.Scope, errNotDirChain)
	}
	out := []srcEntry{{rel: ".", fi: root}}
	var walk func(dir string) error
	walk = func(dir string) error {
		list, err := tc.src.SFTP.ReadDir(ctx, tc.srcPath(dir))
		if err != nil {
			return fmt.Errorf("source on %s: %w", tc.m.From, err)
		}
		for _, fi := range list {
			rel := path.Join(dir, fi.Name())
			out = append(out, srcEntry{rel: rel, fi: fi})
			if fi.IsDir() {
				if err := walk(rel); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk("."); err != nil {
		return nil, err
	}
	return out, nil
}

// sameTree reports whether two scans of the source agree (type, size,
// permission bits, modification time); if not, it names a path that
// differs.
func sameTree(a, b []srcEntry) (string, bool) {
	for i := range max(len(a), len(b)) {
		if i >= len(a) {
			return b[i].rel, false
		}
		if i >= len(b) || a[i].rel != b[i].rel {
			return a[i].rel, false
		}
		x, y := a[i].fi, b[i].fi
		if x.Mode() != y.Mode() || x.ModTime().Unix() != y.ModTime().Unix() || !x.IsDir() && x.Size() != y.Size() {
			return a[i].rel, false
		}
	}
	return "", true
}

func kindOf(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeNamedPipe != 0:
		return "named pipe"
	case mode&fs.ModeSocket != 0:
		return "socket"
	case mode&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// writableDir makes the destination directory rel writable by its owner
// while entries are copied into it (an earlier run may have set its final
// permission bits already); setMeta sets them at the end.
func (tc *tenantCopy) writableDir(ctx context.Context, rel string) error {
	dp := tc.dstPath(rel)
	fi, err := tc.dst.SFTP.Lstat(ctx, dp)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o700 != 0o700 {
		return tc.dst.SFTP.Chmod(ctx, dp, fi.Mode().Perm()|0o700)
	}
	return nil
}

// copyDir makes the directory e on the destination.
func (tc *tenantCopy) copyDir(ctx context.Context, e srcEntry) error {
	dp := tc.dstPath(e.rel)
	fi, err := tc.dst.SFTP.Lstat(ctx, dp)
	switch {
	case err == nil && fi.IsDir():
		return tc.writableDir(ctx, e.rel)
	case err == nil:
		if !tc.mayReplace() {
			return tc.conflict(e.rel, "is not a directory")
		}
		if err := tc.dst.SFTP.Remove(ctx, dp); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return tc.dst.SFTP.Mkdir(ctx, dp, 0o700)
}

// setMeta gives p the permission bits and modification time of fi.
func (tc *tenantCopy) setMeta(ctx context.Context, p string, fi fs.FileInfo) error {
	if err := tc.dst.SFTP.Chmod(ctx, p, fi.Mode().Perm()); err != nil {
		return err
	}
	return tc.dst.SFTP.Chtimes(ctx, p, fi.ModTime(), fi.ModTime())
}

// removeEntry removes p (a directory with its content) on the destination.
func (tc *tenantCopy) removeEntry(ctx context.Context, p string, fi fs.FileInfo) error {
	if fi.IsDir() {
		return tc.dst.SFTP.RemoveAll(ctx, p)
	}
	return tc.dst.SFTP.Remove(ctx, p)
}

// copyFile copies the regular file e, unless its copy is there already.
func (tc *tenantCopy) copyFile(ctx context.Context, e srcEntry) error {
	sp, dp := tc.srcPath(e.rel), tc.dstPath(e.rel)
	dfi, err := tc.dst.SFTP.Lstat(ctx, dp)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err == nil {
		rec, ok := tc.mg.journal.file(tc.m, e.rel)
		if ok && sameSource(rec, e.fi) && dfi.Mode().IsRegular() && dfi.Size() == rec.DSize && dfi.ModTime().Unix() == rec.DMtime {
			tc.mu.Lock()
			tc.checked = append(tc.checked, rec)
			tc.mu.Unlock()
			return tc.fileDone(e)
		}
		if dfi.Mode().IsRegular() && dfi.Size() == e.fi.Size() {
			same, err := tc.sameContent(ctx, e, sp, dp)
			if err != nil || same {
				return err
			}
		}
		if !tc.mayReplace() {
			return tc.conflict(e.rel, "differs from the source")
		}
	} else {
		dfi = nil
	}
	return tc.transfer(ctx, e, dfi)
}

// sameSource reports whether the source file still is what rec recorded.
func sameSource(rec journalRecord, fi fs.FileInfo) bool {
	return rec.Size == fi.Size() && rec.Mtime == fi.ModTime().Unix() && rec.Mode == uint32(fi.Mode().Perm())
}

// sameContent reports whether the destination file dp holds the source's
// content (by SHA-256); if so it gives it the source's metadata and
// records it as copied.
func (tc *tenantCopy) sameContent(ctx context.Context, e srcEntry, sp, dp string) (bool, error) {
	sh, _, err := hashFile(ctx, tc.src.SFTP, sp)
	if err != nil {
		return false, err
	}
	dh, _, err := hashFile(ctx, tc.dst.SFTP, dp)
	if err != nil || sh != dh {
		return false, err
	}
	if err := tc.unchanged(ctx, e, sp); err != nil {
		return false, err
	}
	if err := tc.setMeta(ctx, dp, e.fi); err != nil {
		return false, err
	}
	return true, tc.recordFile(ctx, e, dp, sh)
}

// unchanged checks that the source file sp still has e's size, mode and
// modification time.
func (tc *tenantCopy) unchanged(ctx context.Context, e srcEntry, sp string) error {
	fi, err := tc.src.SFTP.Lstat(ctx, sp)
	if err != nil {
		return err
	}
	if fi.Mode() != e.fi.Mode() || fi.Size() != e.fi.Size() || fi.ModTime().Unix() != e.fi.ModTime().Unix() {
		return fmt.Errorf("%w: %q", ErrSourceChanged, path.Join(tc.m.Scope, e.rel))
	}
	return nil
}

// recordFile journals the verified copy dp of e.
func (tc *tenantCopy) recordFile(ctx context.Context, e srcEntry, dp, sum string) error {
	fi, err := tc.dst.SFTP.Lstat(ctx, dp)
	if err != nil {
		return err
	}
	rec := journalRecord{Op: "file", From: tc.m.From, To: tc.m.To, Key: tc.m.Key, Path: e.rel,
		Size: e.fi.Size(), Mtime: e.fi.ModTime().Unix(), Mode: uint32(e.fi.Mode().Perm()),
		DSize: fi.Size(), DMtime: fi.ModTime().Unix(), SHA256: sum}
	if err := tc.mg.journal.record(rec, false); err != nil {
		return err
	}
	return tc.fileDone(e)
}

// fileDone counts e and reports it.
func (tc *tenantCopy) fileDone(e srcEntry) error {
	tc.mu.Lock()
	tc.files++
	tc.bytes += e.fi.Size()
	p := Progress{Event: EventFile, Move: tc.m, Path: e.rel,
		Files: tc.files, TotalFiles: tc.res.Files, Bytes: tc.bytes, TotalBytes: tc.res.Bytes}
	tc.mu.Unlock()
	tc.mg.progress(p)
	return nil
}

// transfer copies e to a temporary name, verifies it, and renames it over
// dfi (nil when the destination has nothing there).
func (tc *tenantCopy) transfer(ctx context.Context, e srcEntry, dfi fs.FileInfo) (err error) {
	sp, dp := tc.srcPath(e.rel), tc.dstPath(e.rel)
	tmp := tc.tempFor(e.rel)
	if err := tc.dst.SFTP.Remove(ctx, tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	out, err := tc.dst.SFTP.OpenFile(ctx, tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if ctx.Err() != nil { // the server may have created it all the same
			tc.removeTemp(ctx, tmp)
		}
		return err
	}
	placed := false
	defer func() {
		if !placed {
			out.Close()
			tc.removeTemp(ctx, tmp)
		}
	}()
	in, err := tc.src.SFTP.Open(ctx, sp)
	if err != nil {
		return err
	}
	defer in.Close()
	ifi, err := in.Stat()
	if err != nil {
		return err
	}
	if !ifi.Mode().IsRegular() || ifi.Size() != e.fi.Size() || ifi.ModTime().Unix() != e.fi.ModTime().Unix() {
		return fmt.Errorf("%w: %q", ErrSourceChanged, path.Join(tc.m.Scope, e.rel))
	}
	h := sha256.New()
	pr, pw := io.Pipe()
	readErr := make(chan error, 1)
	go func() {
		_, err := in.WriteTo(io.MultiWriter(h, pw))
		pw.CloseWithError(err)
		readErr <- err
	}()
	n, werr := out.ReadFrom(pr)
	pr.CloseWithError(errors.New("copy stopped"))
	if rerr := <-readErr; rerr != nil {
		return rerr
	}
	if werr != nil {
		return werr
	}
	if CopiedHook != nil {
		CopiedHook(tc.m, e.rel)
	}
	if err := out.Sync(); err != nil {
		var se *sftpjail.StatusError
		if !errors.As(err, &se) || se.Code != statusOpUnsupported {
			return err
		}
	}
	if err := out.Close(); err != nil {
		return err
	}
	if n != e.fi.Size() {
		return fmt.Errorf("%w: %q (%d bytes read, %d listed)", ErrSourceChanged, path.Join(tc.m.Scope, e.rel), n, e.fi.Size())
	}
	if err := tc.unchanged(ctx, e, sp); err != nil {
		return err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	got, size, err := hashFile(ctx, tc.dst.SFTP, tmp)
	if err != nil {
		return err
	}
	if got != sum || size != n {
		return fmt.Errorf("agentbe: the copy of %q on %s does not verify: %d bytes, SHA-256 %s; the source has %d bytes, SHA-256 %s",
			path.Join(tc.m.Scope, e.rel), tc.m.To, size, got, n, sum)
	}
	if err := tc.setMeta(ctx, tmp, e.fi); err != nil {
		return err
	}
	if dfi != nil && !dfi.Mode().IsRegular() {
		if err := tc.removeEntry(ctx, dp, dfi); err != nil {
			return err
		}
	}
	if RenameHook != nil {
		RenameHook(tc.m, e.rel)
	}
	if err := tc.dst.SFTP.Rename(ctx, tmp, dp); err != nil {
		if ctx.Err() != nil && tc.renamed(ctx, tmp, dp) {
			placed = true
			tc.copied(n)
		}
		return err
	}
	placed = true
	tc.copied(n)
	return tc.recordFile(ctx, e, dp, sum)
}

// removeTemp removes the temporary file tmp of a copy that failed, even
// when ctx is cancelled; a run after a lost link removes what is left.
func (tc *tenantCopy) removeTemp(ctx context.Context, tmp string) {
	cctx, cancel := detached(ctx)
	defer cancel()
	tc.dst.SFTP.Remove(cctx, tmp)
}

// detached is ctx without its cancellation, for the clean-up of a copy
// that failed or was cancelled, bounded so a lost link cannot hold it.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// copied counts a file of n bytes this run placed.
func (tc *tenantCopy) copied(n int64) {
	tc.mu.Lock()
	tc.res.CopiedFiles++
	tc.res.CopiedBytes += n
	tc.mu.Unlock()
}

// renamed tells whether a rename of tmp to dp that was cancelled while in
// flight took place on the server all the same, so the run counts the file
// it placed (the next run finds it and verifies it without copying it).
func (tc *tenantCopy) renamed(ctx context.Context, tmp, dp string) bool {
	cctx, cancel := detached(ctx)
	defer cancel()
	if _, err := tc.dst.SFTP.Lstat(cctx, tmp); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	fi, err := tc.dst.SFTP.Lstat(cctx, dp)
	return err == nil && fi.Mode().IsRegular()
}

// TempName is the name a file at dp is copied under before it is
// verified: the prefix and a hash of its own name, in its directory.
func TempName(dp string) string {
	sum := sha256.Sum256([]byte(path.Base(dp)))
	return path.Join(path.Dir(dp), TempPrefix+hex.EncodeToString(sum[:8]))
}

// hashFile returns the SHA-256 and size of the remote file p.
func hashFile(ctx context.Context, c *sftpjail.Client, p string) (string, int64, error) {
	f, err := c.Open(ctx, p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := f.WriteTo(h)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// copyLink recreates the link e on the destination with the same target.
// The source daemon shows a target inside its workspace only (relative, or
// absolute from the workspace root); an absolute one is written relative
// to the link, which means the same in the new workspace. A link whose
// target the daemon does not show is listed as unmovable.
func (tc *tenantCopy) copyLink(ctx context.Context, e srcEntry) error {
	sp, dp := tc.srcPath(e.rel), tc.dstPath(e.rel)
	target, err := tc.src.SFTP.ReadLink(ctx, sp)
	if err != nil {
		var se *sftpjail.StatusError
		if !errors.As(err, &se) {
			return err
		}
		tc.unmovable(e.rel, fmt.Sprintf("%s (link not copied: %s)", e.rel, se.Message))
		return nil
	}
	want := linkTarget(sp, target)
	dfi, err := tc.dst.SFTP.Lstat(ctx, dp)
	switch {
	case err == nil:
		if dfi.Mode()&fs.ModeSymlink != 0 {
			got, err := tc.dst.SFTP.ReadLink(ctx, dp)
			if err == nil && linkTarget(dp, got) == want {
				return nil
			}
		}
		if !tc.mayReplace() {
			return tc.conflict(e.rel, "differs from the source")
		}
		if err := tc.removeEntry(ctx, dp, dfi); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return tc.dst.SFTP.Symlink(ctx, want, dp)
}

// linkTarget is the target of the link at p (an SFTP path relative to the
// daemon's workspace root) as a relative path: an absolute target is a
// workspace path, made relative to the link's directory.
func linkTarget(p, target string) string {
	if !path.IsAbs(target) {
		return path.Clean(target)
	}
	return relativeTo(path.Dir(p), strings.TrimPrefix(path.Clean(target), "/"))
}

// relativeTo returns the relative path from directory from to to, both
// clean paths relative to one root ("." or "" for the root).
func relativeTo(from, to string) string {
	split := func(p string) []string {
		if p == "" || p == "." {
			return nil
		}
		return strings.Split(p, "/")
	}
	f, t := split(from), split(to)
	i := 0
	for i < len(f) && i < len(t) && f[i] == t[i] {
		i++
	}
	parts := make([]string, 0, len(f)-i+len(t)-i)
	for range f[i:] {
		parts = append(parts, "..")
	}
	parts = append(parts, t[i:]...)
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}

// extras checks, for every directory of the source, that the destination
// has each of its entries (but the unmovable ones) with the same type (and
// size, for a file); it lists the destination's entries the source lacks,
// and removes the temporary files an interrupted run left.
func (tc *tenantCopy) extras(ctx context.Context, entries []srcEntry) error {
	for _, e := range entries {
		if !e.fi.IsDir() {
			continue
		}
		list, err := tc.dst.SFTP.ReadDir(ctx, tc.dstPath(e.rel))
		if err != nil {
			return err
		}
		have := map[string]fs.FileInfo{}
		for _, fi := range list {
			rel := path.Join(e.rel, fi.Name())
			if tc.names[e.rel][fi.Name()] != nil {
				have[fi.Name()] = fi
				continue
			}
			if strings.HasPrefix(fi.Name(), TempPrefix) && fi.Mode().IsRegular() {
				if err := tc.dst.SFTP.Remove(ctx, tc.dstPath(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				continue
			}
			tc.res.Extra = append(tc.res.Extra, rel)
		}
		for name, sfi := range tc.names[e.rel] {
			rel := path.Join(e.rel, name)
			if tc.skipped[rel] {
				continue
			}
			dfi := have[name]
			if dfi == nil || dfi.Mode().Type() != sfi.Mode().Type() || sfi.Mode().IsRegular() && dfi.Size() != sfi.Size() {
				return fmt.Errorf("agentbe: the copy of %q on %s does not verify: missing, or not the source's type and size",
					path.Join(tc.m.Scope, rel), tc.m.To)
			}
		}
	}
	return nil
}

// deleteSource removes the tenant's source after hashing again the copies
// an earlier run made; a tenant with unmovable entries keeps it.
func (tc *tenantCopy) deleteSource(ctx context.Context) error {
	if len(tc.res.Unmovable) > 0 {
		return nil
	}
	for _, rec := range tc.checked {
		got, size, err := hashFile(ctx, tc.dst.SFTP, tc.dstPath(rec.Path))
		if err != nil {
			return err
		}
		if got != rec.SHA256 || size != rec.Size {
			return fmt.Errorf("agentbe: the copy of %q on %s changed since it was verified; the source is kept",
				path.Join(tc.m.Scope, rec.Path), tc.m.To)
		}
	}
	if err := tc.src.SFTP.RemoveAll(ctx, tc.srcPath(".")); err != nil {
		return fmt.Errorf("delete the source on %s: %w", tc.m.From, err)
	}
	if err := tc.mg.journal.record(journalRecord{Op: "deleted", From: tc.m.From, To: tc.m.To, Key: tc.m.Key}, true); err != nil {
		return err
	}
	tc.res.SourceDeleted = true
	tc.mg.progress(Progress{Event: EventSourceDeleted, Move: tc.m, Files: tc.files, TotalFiles: tc.res.Files,
		Bytes: tc.bytes, TotalBytes: tc.res.Bytes})
	return nil
}
