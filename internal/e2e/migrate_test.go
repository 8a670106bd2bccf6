package e2e_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/migrate"
)

// addrs lists the daemons' addresses: a shard list.
func addrs(daemons []*testDaemon) []string {
	out := make([]string, len(daemons))
	for i, d := range daemons {
		out[i] = d.addr
	}
	return out
}

// migrateConnect reaches the daemons, each pinned to its own host key, on
// their whole workspace.
func migrateConnect(t testing.TB, daemons []*testDaemon) agentbe.ConnectFunc {
	t.Helper()
	byAddr := map[string]ssh.HostKeyCallback{}
	for _, d := range daemons {
		byAddr[d.addr] = d.pinned(t)
	}
	return func(ctx context.Context, shard string) (*agentbe.Remote, error) {
		cb := byAddr[shard]
		if cb == nil {
			return nil, fmt.Errorf("no daemon %s", shard)
		}
		host, port := splitHostPort(shard)
		return agentbe.NewRemote(agentbe.RemoteConfig{RootDir: "/", Host: host, Port: port, HostKeyCallback: cb,
			KeepaliveInterval: -1, Reconnect: agentbe.ReconnectConfig{Disabled: true}, OperationTimeout: time.Minute})
	}
}

// daemonAt returns the daemon listening at addr.
func daemonAt(daemons []*testDaemon, addr string) *testDaemon {
	for _, d := range daemons {
		if d.addr == addr {
			return d
		}
	}
	return nil
}

// treeEntry is what a tree snapshot records of one entry.
type treeEntry struct {
	mode   fs.FileMode
	mtime  int64 // regular files and directories
	sum    string
	target string
}

// snapshot records the tree at dir from the disk, links not followed.
func snapshot(t *testing.T, dir string) map[string]treeEntry {
	t.Helper()
	out := map[string]treeEntry{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := treeEntry{mode: fi.Mode()}
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			e.sum, e.mtime = hex.EncodeToString(s[:]), fi.ModTime().Unix()
		case fi.IsDir():
			e.mtime = fi.ModTime().Unix()
		case fi.Mode()&fs.ModeSymlink != 0:
			e.target, _ = os.Readlink(p)
		}
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// randomBytes returns n random bytes.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// fillTenants writes each key's files through a sticky pool over daemons,
// as an application would: a few files in a few directories, one
// executable, one read-only directory, one link inside the scope.
func fillTenants(t *testing.T, daemons []*testDaemon, keys []string) {
	t.Helper()
	ctx := context.Background()
	p := remotePool(t, daemons)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, key := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := p.With(ctx, key, nil, func(b agentbe.Backend) error {
				dir := "tenants/" + key + "/"
				for name, data := range map[string][]byte{
					"a.txt":         []byte("tenant " + key),
					"dir/b.bin":     randomBytes(1000 + 37*i),
					"dir/sub/empty": nil,
					"run.sh":        []byte("#!/bin/sh\necho hi\n"),
					"ro/frozen.txt": []byte("frozen"),
				} {
					if err := b.Write(ctx, dir+name, data); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// What a tenant's commands would do next: modes, a link, old times.
	for _, key := range keys {
		root := filepath.Join(daemonAt(daemons, agentbe.ShardFor(key, addrs(daemons))).root, "tenants", key)
		old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
		must(t, os.Chmod(filepath.Join(root, "run.sh"), 0o755))
		must(t, os.Symlink("dir/b.bin", filepath.Join(root, "link")))
		must(t, os.Chtimes(filepath.Join(root, "a.txt"), old, old))
		must(t, os.Chmod(filepath.Join(root, "ro"), 0o555))
		must(t, os.Chtimes(filepath.Join(root, "ro"), old, old))
	}
	must(t, p.Close(ctx))
}

// tenantKeys returns n keys.
func tenantKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("tenant-%05d", i)
	}
	return keys
}

// checkPlan asserts plan moves exactly the keys whose rendezvous shard
// differs between the lists, from and to that shard.
func checkPlan(t *testing.T, plan *agentbe.MigrationPlan, keys, from, to []string) {
	t.Helper()
	want := map[string]bool{}
	for _, k := range keys {
		if agentbe.ShardFor(k, from) != agentbe.ShardFor(k, to) {
			want[k] = true
		}
	}
	if len(plan.Moves) != len(want) || plan.Kept != len(keys)-len(want) {
		t.Fatalf("plan moves %d and keeps %d of %d keys; rendezvous moves %d", len(plan.Moves), plan.Kept, len(keys), len(want))
	}
	for _, m := range plan.Moves {
		if !want[m.Key] || m.From != agentbe.ShardFor(m.Key, from) || m.To != agentbe.ShardFor(m.Key, to) || m.Scope != "tenants/"+m.Key {
			t.Errorf("move %+v", m)
		}
	}
}

// checkMoved asserts every moved tenant's tree on its new shard equals
// its snapshot from before the migration.
func checkMoved(t *testing.T, daemons []*testDaemon, plan *agentbe.MigrationPlan, before map[string]map[string]treeEntry) {
	t.Helper()
	for _, m := range plan.Moves {
		got := snapshot(t, filepath.Join(daemonAt(daemons, m.To).root, "tenants", m.Key))
		want := before[m.Key]
		for rel, w := range want {
			if g, ok := got[rel]; !ok || g != w {
				t.Errorf("%s: %s is %+v on %s, was %+v", m.Key, rel, g, m.To, w)
			}
		}
		for rel := range got {
			if _, ok := want[rel]; !ok {
				t.Errorf("%s: %s on %s was not in the source", m.Key, rel, m.To)
			}
		}
	}
}

// checkPoolReads asserts a sticky pool over daemons finds every tenant's
// files, hash-equal to the snapshot.
func checkPoolReads(t *testing.T, daemons []*testDaemon, keys []string, before map[string]map[string]treeEntry) {
	t.Helper()
	ctx := context.Background()
	p := remotePool(t, daemons)
	defer p.Close(ctx)
	for _, key := range keys {
		err := p.With(ctx, key, nil, func(b agentbe.Backend) error {
			for rel, e := range before[key] {
				if !e.mode.IsRegular() {
					continue
				}
				data, err := b.Read(ctx, "tenants/"+key+"/"+rel)
				if err != nil {
					return err
				}
				if s := sha256.Sum256(data); hex.EncodeToString(s[:]) != e.sum {
					return fmt.Errorf("%s differs", rel)
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s through the pool: %v", key, err)
		}
	}
}

// noTemps asserts no migration temporary file is left on the daemons.
func noTemps(t *testing.T, daemons []*testDaemon) {
	t.Helper()
	for _, d := range daemons {
		filepath.WalkDir(d.root, func(p string, de fs.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(de.Name(), ".agentbe-migrate-") {
				t.Errorf("temporary file left: %s", p)
			}
			return nil
		})
	}
}

// TestMigrateThreeToFour: tenants spread by a pool over three daemons; a
// fourth joins. The plan moves exactly the keys rendezvous hashing gives
// the new daemon (about a quarter); a migration cut short mid-file and run
// again copies every file once, leaves nothing behind, and a pool over the
// four daemons finds every tenant's files intact; links are copied as
// links, never followed; deleting the sources comes last.
func TestMigrateThreeToFour(t *testing.T) {
	ctx := context.Background()
	daemons := startDaemons(t, 4)
	old, grown := addrs(daemons[:3]), addrs(daemons)
	keys := tenantKeys(48)
	fillTenants(t, daemons[:3], keys)

	found, err := agentbe.DiscoverTenants(ctx, old, "tenants", migrateConnect(t, daemons))
	must(t, err)
	if got := agentbe.FoundKeys(found); strings.Join(got, ",") != strings.Join(keys, ",") || len(found) != len(keys) {
		t.Fatalf("discovered %d directories, %d keys", len(found), len(got))
	}
	if s := agentbe.StrayTenants(found, old); len(s) != 0 {
		t.Fatalf("strays before the migration: %v", s)
	}
	plan, err := agentbe.PlanMigration(old, grown, agentbe.FoundKeys(found), "tenants")
	must(t, err)
	checkPlan(t, plan, keys, old, grown)
	// About a quarter of the keys move (measured on many keys: these few
	// vary with the daemons' random ports).
	many, err := agentbe.PlanMigration(old, grown, tenantKeys(10000), "tenants")
	must(t, err)
	if f := float64(len(many.Moves)) / 10000; f < 0.22 || f > 0.28 {
		t.Errorf("%.3f of the keys move to the fourth daemon, expected about a quarter", f)
	}
	for _, m := range plan.Moves {
		if m.To != daemons[3].addr {
			t.Errorf("%s moves to %s, not to the new daemon", m.Key, m.To)
		}
	}
	t.Logf("%d of %d tenants move", len(plan.Moves), len(keys))

	// Hostile entries in moved tenants: a link to a sibling tenant's file,
	// a link to the parent directory, a link out of the workspace to a
	// canary, a named pipe, and one big file.
	canary := filepath.Join(t.TempDir(), "canary")
	must(t, os.WriteFile(canary, []byte("CANARY-SECRET"), 0o600))
	special, sibling := plan.Moves[len(plan.Moves)/2], plan.Moves[0]
	sdir := filepath.Join(daemonAt(daemons, special.From).root, "tenants", special.Key)
	must(t, os.Symlink("../"+sibling.Key+"/a.txt", filepath.Join(sdir, "sibling")))
	must(t, os.Symlink("..", filepath.Join(sdir, "up")))
	must(t, os.Symlink(canary, filepath.Join(sdir, "outside")))
	must(t, syscall.Mkfifo(filepath.Join(sdir, "fifo"), 0o600))
	big := randomBytes(4 << 20)
	must(t, os.WriteFile(filepath.Join(sdir, "big.bin"), big, 0o640))

	before := map[string]map[string]treeEntry{}
	for _, k := range keys {
		before[k] = snapshot(t, filepath.Join(daemonAt(daemons, agentbe.ShardFor(k, old)).root, "tenants", k))
	}
	totalFiles := 0
	for _, m := range plan.Moves {
		for _, e := range before[m.Key] {
			if e.mode.IsRegular() {
				totalFiles++
			}
		}
	}

	// The drain: a pool told the next shard list refuses the moving
	// tenants and serves the others as before.
	draining := newRemotePool(t, daemons[:3], func(c *agentbe.PoolConfig[agentbe.RemoteConfig]) { c.NextShards = grown })
	moving := map[string]bool{}
	for _, m := range plan.Moves {
		moving[m.Key] = true
	}
	for _, k := range keys {
		err := draining.With(ctx, k, nil, func(b agentbe.Backend) error {
			_, err := b.Read(ctx, "tenants/"+k+"/a.txt")
			return err
		})
		if moving[k] != errors.Is(err, agentbe.ErrTenantMoving) || !moving[k] && err != nil {
			t.Errorf("%s (moving %v) while draining: %v", k, moving[k], err)
		}
	}
	must(t, draining.Close(ctx))

	// First run: cancelled once big.bin's content is written, before it is
	// verified and placed.
	journal := filepath.Join(t.TempDir(), "migrate.journal")
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	migrate.CopiedHook = func(m migrate.Move, rel string) {
		if m.Key == special.Key && rel == "big.bin" {
			cancel()
		}
	}
	opts := agentbe.MigrateOptions{Connect: migrateConnect(t, daemons), Journal: journal}
	r1, err := agentbe.Migrate(cctx, plan, opts)
	migrate.CopiedHook = nil
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	copied1 := 0
	for _, r := range r1.Tenants {
		copied1 += r.CopiedFiles
	}
	if copied1 == 0 || copied1 >= totalFiles {
		t.Fatalf("the cancelled run copied %d of %d files", copied1, totalFiles)
	}
	noTemps(t, daemons)
	if _, err := os.Lstat(filepath.Join(daemonAt(daemons, special.To).root, "tenants", special.Key, "big.bin")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("big.bin placed although its copy was cut short: %v", err)
	}
	// A killed run leaves its temporary file; the next run replaces it.
	leftover := filepath.Join(daemonAt(daemons, special.To).root, "tenants", special.Key,
		filepath.Base(migrate.TempName("x/big.bin")))
	must(t, os.WriteFile(leftover, big[:1000], 0o600))

	var mu sync.Mutex
	events := map[agentbe.MigrationEvent]int{}
	opts.Progress = func(p agentbe.MigrationProgress) {
		mu.Lock()
		events[p.Event]++
		mu.Unlock()
	}
	opts.Parallel = 3
	r2, err := agentbe.Migrate(ctx, plan, opts)
	must(t, err)
	copied2, again, againFiles := 0, 0, 0
	for _, r := range r2.Tenants {
		copied2 += r.CopiedFiles
		if !r.AlreadyMoved {
			again++
			againFiles += r.Files
		}
		if !r.Verified || r.SourceDeleted || r.Err != nil || len(r.Extra) != 0 {
			t.Errorf("%s: %+v", r.Move.Key, r)
		}
		if r.Move.Key == special.Key {
			if len(r.Unmovable) != 2 || r.Links != 4 {
				t.Errorf("special tenant: %d links, unmovable %q", r.Links, r.Unmovable)
			}
		} else if len(r.Unmovable) != 0 {
			t.Errorf("%s: unmovable %q", r.Move.Key, r.Unmovable)
		}
	}
	if copied1+copied2 != totalFiles {
		t.Errorf("copied %d + %d files, the moved tenants hold %d", copied1, copied2, totalFiles)
	}
	// The tenants the first run finished are not copied again.
	if again == 0 || again == len(plan.Moves) && len(plan.Moves) > 1 {
		t.Errorf("the second run took up %d of %d tenants", again, len(plan.Moves))
	}
	if events[agentbe.MigrationStarted] != again || events[agentbe.MigrationVerified] != again ||
		events[agentbe.MigrationFile] != againFiles {
		t.Errorf("progress events %v for %d tenants, %d files", events, again, againFiles)
	}
	noTemps(t, daemons)

	// The unmovable entries are missing from the copy, and nothing of the
	// canary was copied; the rest is identical.
	delete(before[special.Key], "outside")
	delete(before[special.Key], "fifo")
	checkMoved(t, daemons, plan, before)
	filepath.WalkDir(daemons[3].root, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "CANARY") {
				t.Errorf("canary content copied to %s", p)
			}
		}
		return nil
	})

	// A third run finds everything done and copies nothing.
	r3, err := agentbe.Migrate(ctx, plan, agentbe.MigrateOptions{Connect: migrateConnect(t, daemons), Journal: journal})
	must(t, err)
	for _, r := range r3.Tenants {
		if r.CopiedFiles != 0 || !r.Verified || !r.AlreadyMoved {
			t.Errorf("re-run: %+v", r)
		}
	}

	// The pool over four daemons serves every tenant from its shard, and
	// the tenants write there.
	checkPoolReads(t, daemons, keys, before)
	p4 := remotePool(t, daemons)
	for _, m := range plan.Moves {
		must(t, p4.With(ctx, m.Key, nil, func(b agentbe.Backend) error {
			return b.Write(ctx, "tenants/"+m.Key+"/a.txt", []byte("written after the move"))
		}))
	}
	must(t, p4.Close(ctx))

	// Until the sources go, the new shard list sees them as strays.
	found4, err := agentbe.DiscoverTenants(ctx, grown, "tenants", migrateConnect(t, daemons))
	must(t, err)
	if s := agentbe.StrayTenants(found4, grown); len(s) != len(plan.Moves) {
		t.Errorf("%d strays, %d tenants moved", len(s), len(plan.Moves))
	}
	r4, err := agentbe.Migrate(ctx, plan, agentbe.MigrateOptions{Connect: migrateConnect(t, daemons), Journal: journal, DeleteSource: true})
	must(t, err)
	for _, r := range r4.Tenants {
		// The special tenant keeps its source: two entries were not copied.
		if r.SourceDeleted == (r.Move.Key == special.Key) {
			t.Errorf("%s: source deleted %v", r.Move.Key, r.SourceDeleted)
		}
	}
	found4, err = agentbe.DiscoverTenants(ctx, grown, "tenants", migrateConnect(t, daemons))
	must(t, err)
	if s := agentbe.StrayTenants(found4, grown); len(s) != 1 || s[0].Key != special.Key {
		t.Errorf("strays after deleting the sources: %v", s)
	}
	if _, err := os.Stat(canary); err != nil {
		t.Errorf("canary: %v", err)
	}
	// Deleting the sources left the tenants' new writes alone.
	for _, m := range plan.Moves {
		before[m.Key]["a.txt"] = treeEntry{mode: 0o644, sum: sha256hex("written after the move")}
	}
	checkPoolReads(t, daemons, keys, before)
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestMigrateFourToThree: removing a daemon moves exactly its tenants, to
// the others, and deletes their sources.
func TestMigrateFourToThree(t *testing.T) {
	ctx := context.Background()
	daemons := startDaemons(t, 4)
	all, shrunk := addrs(daemons), addrs(daemons[:3])
	keys := tenantKeys(24)
	fillTenants(t, daemons, keys)
	before := map[string]map[string]treeEntry{}
	for _, k := range keys {
		before[k] = snapshot(t, filepath.Join(daemonAt(daemons, agentbe.ShardFor(k, all)).root, "tenants", k))
	}
	plan, err := agentbe.PlanMigration(all, shrunk, keys, "tenants")
	must(t, err)
	checkPlan(t, plan, keys, all, shrunk)
	for _, m := range plan.Moves {
		if m.From != daemons[3].addr {
			t.Errorf("%s moves from %s, not from the removed daemon", m.Key, m.From)
		}
	}
	_, err = agentbe.Migrate(ctx, plan, agentbe.MigrateOptions{Connect: migrateConnect(t, daemons), DeleteSource: true, Parallel: 2})
	must(t, err)
	checkMoved(t, daemons, plan, before)
	if entries, _ := os.ReadDir(filepath.Join(daemons[3].root, "tenants")); len(entries) != 0 {
		t.Errorf("the removed daemon keeps %d tenants", len(entries))
	}
	daemons[3].kill()
	checkPoolReads(t, daemons[:3], keys, before)
}

// TestMigrateConflict: a destination that already holds different content
// for a tenant (written there through a failover pool) is not overwritten
// unless asked; identical content counts as copied.
func TestMigrateConflict(t *testing.T) {
	ctx := context.Background()
	daemons, a, b, keys := twoShards(t, 1)
	key := keys[0]
	src := filepath.Join(daemons[0].root, "tenants", key)
	dst := filepath.Join(daemons[1].root, "tenants", key)
	must(t, os.MkdirAll(src, 0o755))
	must(t, os.MkdirAll(dst, 0o755))
	must(t, os.WriteFile(filepath.Join(src, "same"), []byte("same"), 0o644))
	must(t, os.WriteFile(filepath.Join(dst, "same"), []byte("same"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "f"), []byte("old shard"), 0o644))
	must(t, os.WriteFile(filepath.Join(dst, "f"), []byte("new shard"), 0o644))
	must(t, os.WriteFile(filepath.Join(dst, "only-new"), []byte("x"), 0o644))
	plan, err := agentbe.PlanMigration([]string{a}, []string{a, b}, []string{key}, "tenants")
	must(t, err)
	journal := filepath.Join(t.TempDir(), "j")
	rep, err := agentbe.Migrate(ctx, plan, agentbe.MigrateOptions{Connect: migrateConnect(t, daemons), Journal: journal, DeleteSource: true})
	if !errors.Is(err, agentbe.ErrMigrationConflict) || rep.Tenants[0].SourceDeleted {
		t.Fatalf("conflict: %v %+v", err, rep.Tenants[0])
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "f")); string(got) != "new shard" {
		t.Errorf("the destination's file was replaced: %q", got)
	}
	if _, err := os.Stat(src); err != nil {
		t.Errorf("source: %v", err)
	}
	rep, err = agentbe.Migrate(ctx, plan, agentbe.MigrateOptions{Connect: migrateConnect(t, daemons), Journal: journal, Overwrite: true})
	must(t, err)
	r := rep.Tenants[0]
	if r.CopiedFiles != 1 || r.Files != 2 || strings.Join(r.Extra, ",") != "only-new" {
		t.Errorf("with Overwrite: %+v", r)
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "f")); string(got) != "old shard" {
		t.Errorf("after Overwrite: %q", got)
	}
}

// TestMigrateSourceChangedMidCopy: a source file written to while it is
// copied fails its tenant; the copy is not placed.
func TestMigrateSourceChangedMidCopy(t *testing.T) {
	ctx := context.Background()
	daemons, a, b, keys := twoShards(t, 1)
	key := keys[0]
	src := filepath.Join(daemons[0].root, "tenants", key, "f")
	must(t, os.MkdirAll(filepath.Dir(src), 0o755))
	must(t, os.WriteFile(src, []byte("first"), 0o644))
	migrate.CopiedHook = func(m migrate.Move, rel string) {
		os.WriteFile(src, []byte("second, longer"), 0o644)
	}
	defer func() { migrate.CopiedHook = nil }()
	plan, err := agentbe.PlanMigration([]string{a}, []string{a, b}, []string{key}, "tenants")
	must(t, err)
	_, err = agentbe.Migrate(ctx, plan, agentbe.MigrateOptions{Connect: migrateConnect(t, daemons), DeleteSource: true})
	if !errors.Is(err, agentbe.ErrSourceChanged) {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Lstat(filepath.Join(daemons[1].root, "tenants", key, "f")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the copy was placed: %v", err)
	}
	noTemps(t, daemons)
}

// TestMigrateRefusesLinkedScope: a tenant directory that is a link (to
// another tenant, or out of the workspace) is refused on either side, and
// nothing is read through it or written through it.
func TestMigrateRefusesLinkedScope(t *testing.T) {
	ctx := context.Background()
	daemons, a, b, moving := twoShards(t, 2)
	canary := t.TempDir()
	must(t, os.WriteFile(filepath.Join(canary, "secret"), []byte("CANARY"), 0o600))
	tenants := filepath.Join(daemons[0].root, "tenants")
	must(t, os.MkdirAll(tenants, 0o755))
	must(t, os.Symlink(canary, filepath.Join(tenants, moving[0]))) // source side
	must(t, os.MkdirAll(filepath.Join(tenants, moving[1]), 0o755))
	must(t, os.WriteFile(filepath.Join(tenants, moving[1], "f"), []byte("x"), 0o644))
	outside := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(daemons[1].root, "tenants"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(daemons[1].root, "tenants", moving[1]))) // destination side
	plan, err := agentbe.PlanMigration([]string{a}, []string{a, b}, moving, "tenants")
	must(t, err)
	rep, err := agentbe.Migrate(ctx, plan, agentbe.MigrateOptions{Connect: migrateConnect(t, daemons)})
	if err == nil {
		t.Fatal("migrated through links")
	}
	for _, r := range rep.Tenants {
		if r.Err == nil || r.Verified {
			t.Errorf("%s: %+v", r.Move.Key, r)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written through the destination's link: %v", entries)
	}
	if entries, _ := os.ReadDir(filepath.Join(daemons[1].root, "tenants")); len(entries) != 1 {
		t.Errorf("destination tenants: %v", entries)
	}
}

// TestPlanMigrationRefuses: bad shard lists, keys and prefixes are errors.
func TestPlanMigrationRefuses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to []string
		keys     []string
		prefix   string
	}{
		{"empty from", nil, []string{"a"}, nil, ""},
		{"empty to", []string{"a"}, nil, nil, ""},
		{"duplicate shard", []string{"a", "a"}, []string{"a"}, nil, ""},
		{"blank shard", []string{"a", " "}, []string{"a"}, nil, ""},
		{"slash in key", []string{"a"}, []string{"b"}, []string{"x/y"}, ""},
		{"dot key", []string{"a"}, []string{"b"}, []string{"."}, ""},
		{"dotdot key", []string{"a"}, []string{"b"}, []string{".."}, ""},
		{"empty key", []string{"a"}, []string{"b"}, []string{""}, ""},
		{"NUL key", []string{"a"}, []string{"b"}, []string{"a\x00b"}, ""},
		{"spaced key", []string{"a"}, []string{"b"}, []string{" a"}, ""},
		{"dotdot prefix", []string{"a"}, []string{"b"}, []string{"k"}, "../x"},
		{"unclean prefix", []string{"a"}, []string{"b"}, []string{"k"}, "a//b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := agentbe.PlanMigration(tc.from, tc.to, tc.keys, tc.prefix); !errors.Is(err, agentbe.ErrInvalidConfig) {
				t.Errorf("got %v", err)
			}
		})
	}
	plan, err := agentbe.PlanMigration([]string{"a", "b"}, []string{"b", "a"}, []string{"k", "k", "l"}, "/t/")
	must(t, err)
	if len(plan.Moves) != 0 || plan.Kept != 2 {
		t.Errorf("reordered shards: %+v", plan)
	}
	plan, err = agentbe.PlanMigration([]string{"a"}, []string{"b"}, []string{"k"}, "/t/")
	must(t, err)
	if len(plan.Moves) != 1 || plan.Moves[0].Scope != "t/k" {
		t.Errorf("prefix /t/: %+v", plan)
	}
	keys := make([]string, 0, 100)
	for i := range 100 {
		keys = append(keys, fmt.Sprint(i))
	}
	sort.Strings(keys)
	plan, err = agentbe.PlanMigration([]string{"a", "b"}, []string{"a", "b", "c"}, keys, "")
	must(t, err)
	for _, m := range plan.Moves {
		if m.Scope != m.Key || m.To != "c" {
			t.Errorf("move %+v", m)
		}
	}
}

// TestMigrateDeleteSourceLater: sources are deleted by a later run only
// while they are what was copied; a source written to after the move is
// kept, and the copy (which the tenant may have changed on its new shard)
// is never touched by the later runs.
func TestMigrateDeleteSourceLater(t *testing.T) {
	ctx := context.Background()
	daemons, a, b, moving := twoShards(t, 2)
	for _, k := range moving {
		dir := filepath.Join(daemons[0].root, "tenants", k)
		must(t, os.MkdirAll(dir, 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("v1"), 0o644))
	}
	plan, err := agentbe.PlanMigration([]string{a}, []string{a, b}, moving, "tenants")
	must(t, err)
	opts := agentbe.MigrateOptions{Connect: migrateConnect(t, daemons), Journal: filepath.Join(t.TempDir(), "j")}
	_, err = agentbe.Migrate(ctx, plan, opts)
	must(t, err)
	// The tenants work on their new shard; one was also written on the old.
	for _, k := range moving {
		must(t, os.WriteFile(filepath.Join(daemons[1].root, "tenants", k, "f"), []byte("v2 on the new shard"), 0o644))
	}
	stale := filepath.Join(daemons[0].root, "tenants", moving[0], "f")
	must(t, os.WriteFile(stale, []byte("written to the old shard"), 0o644))
	opts.DeleteSource = true
	rep, err := agentbe.Migrate(ctx, plan, opts)
	if !errors.Is(err, agentbe.ErrSourceChanged) {
		t.Fatalf("got %v", err)
	}
	for _, r := range rep.Tenants {
		changed := r.Move.Key == moving[0]
		if r.SourceDeleted == changed || r.CopiedFiles != 0 || !r.AlreadyMoved || (r.Err != nil) != changed {
			t.Errorf("source changed %v: %+v", changed, r)
		}
	}
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("changed source: %v", err)
	}
	for _, k := range moving {
		if got, _ := os.ReadFile(filepath.Join(daemons[1].root, "tenants", k, "f")); string(got) != "v2 on the new shard" {
			t.Errorf("%s: the copy became %q", k, got)
		}
	}
}

// TestMigrateTempNameCollision: a tenant file named like the temporary
// file of another of its files is copied, not taken for a leftover.
func TestMigrateTempNameCollision(t *testing.T) {
	ctx := context.Background()
	daemons, a, b, keys := twoShards(t, 1)
	key := keys[0]
	src := filepath.Join(daemons[0].root, "tenants", key)
	must(t, os.MkdirAll(src, 0o755))
	must(t, os.WriteFile(filepath.Join(src, "x"), []byte("x"), 0o644))
	clash := filepath.Base(migrate.TempName("d/x"))
	must(t, os.WriteFile(filepath.Join(src, clash), []byte("mine"), 0o644))
	before := snapshot(t, src)
	plan, err := agentbe.PlanMigration([]string{a}, []string{a, b}, []string{key}, "tenants")
	must(t, err)
	_, err = agentbe.Migrate(ctx, plan, agentbe.MigrateOptions{Connect: migrateConnect(t, daemons)})
	must(t, err)
	checkMoved(t, daemons, plan, map[string]map[string]treeEntry{key: before})
}

// TestMigrateRefusesBadPlans: a plan that moves a key or a directory twice,
// or names an unclean scope, is refused before anything is touched.
func TestMigrateRefusesBadPlans(t *testing.T) {
	connect := func(ctx context.Context, shard string) (*agentbe.Remote, error) {
		t.Fatal("connected for a bad plan")
		return nil, nil
	}
	for name, moves := range map[string][]agentbe.TenantMove{
		"key twice":      {{Key: "k", Scope: "t/k", From: "a", To: "b"}, {Key: "k", Scope: "t/k2", From: "a", To: "c"}},
		"scope twice":    {{Key: "k", Scope: "t/k", From: "a", To: "b"}, {Key: "l", Scope: "t/k", From: "c", To: "b"}},
		"escaping scope": {{Key: "k", Scope: "../k", From: "a", To: "b"}},
		"root scope":     {{Key: "k", Scope: "", From: "a", To: "b"}},
		"same shard":     {{Key: "k", Scope: "t/k", From: "a", To: "a"}},
	} {
		_, err := agentbe.Migrate(context.Background(), &agentbe.MigrationPlan{Moves: moves}, agentbe.MigrateOptions{Connect: connect})
		if !errors.Is(err, agentbe.ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := agentbe.Migrate(context.Background(), &agentbe.MigrationPlan{}, agentbe.MigrateOptions{}); !errors.Is(err, agentbe.ErrInvalidConfig) {
		t.Errorf("no Connect: %v", err)
	}
}

// TestMigrateParallelTenantsShareParents: tenants migrated at once to a
// daemon that has no prefix directory yet all get there (their
// migrations race to make it).
func TestMigrateParallelTenantsShareParents(t *testing.T) {
	ctx := context.Background()
	daemons, a, b, keys := twoShards(t, 16)
	for _, k := range keys {
		dir := filepath.Join(daemons[0].root, "deep", "prefix", k)
		must(t, os.MkdirAll(dir, 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "f"), []byte(k), 0o644))
	}
	plan, err := agentbe.PlanMigration([]string{a}, []string{a, b}, keys, "deep/prefix")
	must(t, err)
	_, err = agentbe.Migrate(ctx, plan, agentbe.MigrateOptions{Connect: migrateConnect(t, daemons), Parallel: 16})
	must(t, err)
	for _, k := range keys {
		if got, err := os.ReadFile(filepath.Join(daemons[1].root, "deep", "prefix", k, "f")); err != nil || string(got) != k {
			t.Errorf("%s: %q %v", k, got, err)
		}
	}
}

// twoShards starts two daemons and returns them, their addresses, and n
// tenant keys ("t0", "t1", …) that the second takes over when it joins
// the first.
func twoShards(t *testing.T, n int) (daemons []*testDaemon, a, b string, keys []string) {
	t.Helper()
	daemons = startDaemons(t, 2)
	a, b = daemons[0].addr, daemons[1].addr
	for i := 0; len(keys) < n; i++ {
		if k := fmt.Sprint("t", i); agentbe.ShardFor(k, []string{a, b}) == b {
			keys = append(keys, k)
		}
	}
	return daemons, a, b, keys
}
