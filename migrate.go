package agentbe

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/agentbe/agent-backend/internal/migrate"
)

// Moving tenants between daemons when a sharded Pool's shard list changes.
// A tenant is a Pool key whose files live in one directory of its daemon's
// workspace, its scope: Prefix/Key (see TenantScope). PlanMigration lists
// the tenants whose shard changes; Migrate copies each one's scope from its
// old daemon to its new one over SFTP. See docs/scaling.md for the
// procedure around it.

// TenantMove is one tenant whose shard changes between two shard lists.
type TenantMove struct {
	Key   string // the Pool key
	Scope string // its directory, relative to each daemon's workspace
	From  string // its shard under the old list
	To    string // its shard under the new list
}

// MigrationPlan lists the tenants whose shard changes when a Pool's Shards
// go from From to To.
type MigrationPlan struct {
	From, To []string
	// Moves are the tenants that change shard, sorted by key.
	Moves []TenantMove
	// Kept counts the keys whose shard stays the same.
	Kept int
}

// PlanMigration compares where a Pool places each key under the shard list
// from and under to (rendezvous hashing, as ShardFor does) and returns the
// keys whose shard changes, about 1/n of them when one shard of n is added
// or removed. prefix is the directory of the workspaces that holds one
// directory per tenant, named by its key ("" for the workspace's top
// level); a key must be one usable directory name (no "/", not "." or
// "..", no control characters, no leading or trailing space). Duplicate
// keys count once.
func PlanMigration(from, to, keys []string, prefix string) (*MigrationPlan, error) {
	if err := checkShardList("from", from); err != nil {
		return nil, err
	}
	if err := checkShardList("to", to); err != nil {
		return nil, err
	}
	prefix, err := cleanTenantPrefix(prefix)
	if err != nil {
		return nil, err
	}
	plan := &MigrationPlan{From: append([]string(nil), from...), To: append([]string(nil), to...)}
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		scope, err := TenantScope(prefix, k)
		if err != nil {
			return nil, err
		}
		a, b := rendezvous(k, from), rendezvous(k, to)
		if a == b {
			plan.Kept++
			continue
		}
		plan.Moves = append(plan.Moves, TenantMove{Key: k, Scope: scope, From: a, To: b})
	}
	sort.Slice(plan.Moves, func(i, j int) bool { return plan.Moves[i].Key < plan.Moves[j].Key })
	return plan, nil
}

// checkShardList refuses an empty list, an empty name and duplicates.
func checkShardList(which string, shards []string) error {
	if len(shards) == 0 {
		return configErr("the "+which+" shard list is empty", nil)
	}
	seen := map[string]bool{}
	for _, s := range shards {
		if strings.TrimSpace(s) == "" {
			return configErr("the "+which+" shard list has an empty name", nil)
		}
		if seen[s] {
			return configErr(fmt.Sprintf("the %s shard list names %q twice", which, s), nil)
		}
		seen[s] = true
	}
	return nil
}

// TenantScope is the directory of key's files under prefix: prefix/key.
func TenantScope(prefix, key string) (string, error) {
	prefix, err := cleanTenantPrefix(prefix)
	if err != nil {
		return "", err
	}
	if !usableTenantName(key) || key == "" || key == "." || key == ".." || strings.Contains(key, "/") {
		return "", configErr(fmt.Sprintf("key %q is not a usable directory name", key), nil)
	}
	return path.Join(prefix, key), nil
}

// cleanTenantPrefix validates a tenant prefix: "" or a clean relative path
// of usable names (leading slashes and one trailing slash are dropped).
func cleanTenantPrefix(prefix string) (string, error) {
	p := strings.TrimSuffix(strings.TrimLeft(prefix, "/"), "/")
	if p == "" || p == "." {
		return "", nil
	}
	bad := path.Clean(p) != p
	for _, seg := range strings.Split(p, "/") {
		bad = bad || seg == ".." || seg == "." || !usableTenantName(seg)
	}
	if bad {
		return "", configErr(fmt.Sprintf("tenant prefix %q is not a clean relative path", prefix), nil)
	}
	return p, nil
}

// usableTenantName reports whether name is a name the daemon accepts in a
// scope path (X-Scope-Path): valid UTF-8, at most 255 bytes, no control
// characters or NUL, no leading or trailing space.
func usableTenantName(name string) bool {
	if len(name) > 255 || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return false
		}
	}
	if name == "" {
		return true
	}
	first, _ := utf8.DecodeRuneInString(name)
	last, _ := utf8.DecodeLastRuneInString(name)
	return !unicode.IsSpace(first) && !unicode.IsSpace(last)
}

// FoundTenant is a tenant directory found on a shard.
type FoundTenant struct {
	Key   string
	Shard string
}

// ConnectFunc returns a Remote for a shard (its daemon's address, as in
// PoolConfig.Shards). The migration uses the Remote's connection only:
// paths are relative to the workspace its RootDir names on the daemon
// (RootDir "/" is the daemon's whole workspace). The caller of Migrate or
// DiscoverTenants owns nothing: they destroy every Remote they got.
type ConnectFunc func(ctx context.Context, shard string) (*Remote, error)

// DiscoverTenants lists the tenant directories under prefix on every
// shard: the entries of prefix that are directories and whose names are
// usable keys (links, files and other names are left out). A shard without
// the prefix directory has none. The result is sorted by key, then shard.
func DiscoverTenants(ctx context.Context, shards []string, prefix string, connect ConnectFunc) ([]FoundTenant, error) {
	prefix, err := cleanTenantPrefix(prefix)
	if err != nil {
		return nil, err
	}
	if connect == nil {
		return nil, configErr("DiscoverTenants needs a ConnectFunc", nil)
	}
	conns := newShardConns(connect)
	defer conns.close()
	var found []FoundTenant
	for _, shard := range shards {
		c, err := conns.get(ctx, shard)
		if err != nil {
			return nil, err
		}
		dir := c.Path(prefix)
		if err := migrate.CheckDirChain(ctx, c, prefix, false); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("shard %s: %w", shard, err)
		}
		entries, err := c.SFTP.ReadDir(ctx, dir)
		if err != nil {
			return nil, fmt.Errorf("shard %s: list %q: %w", shard, prefix, err)
		}
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), migrate.TempPrefix) {
				if _, err := TenantScope("", e.Name()); err == nil {
					found = append(found, FoundTenant{Key: e.Name(), Shard: shard})
				}
			}
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].Key != found[j].Key {
			return found[i].Key < found[j].Key
		}
		return found[i].Shard < found[j].Shard
	})
	return found, nil
}

// FoundKeys returns the distinct keys of found, sorted.
func FoundKeys(found []FoundTenant) []string {
	var keys []string
	for i, f := range found {
		if i == 0 || found[i-1].Key != f.Key {
			keys = append(keys, f.Key)
		}
	}
	sort.Strings(keys)
	return keys
}

// StrayTenants returns the tenant directories of found that lie on a shard
// other than the one shards place their key on: files a tenant left where
// a failover pool once sent it, or a copy a migration did not delete. A
// migration copies a tenant from its own shard only; strays are the
// operator's to inspect.
func StrayTenants(found []FoundTenant, shards []string) []FoundTenant {
	var out []FoundTenant
	for _, f := range found {
		if rendezvous(f.Key, shards) != f.Shard {
			out = append(out, f)
		}
	}
	return out
}

// shardConns are the connections of a migration, one Remote per shard,
// made on first use and destroyed by close.
type shardConns struct {
	connect ConnectFunc
	mu      sync.Mutex
	remotes map[string]*Remote
}

func newShardConns(connect ConnectFunc) *shardConns {
	return &shardConns{connect: connect, remotes: map[string]*Remote{}}
}

// get returns the shard's live SFTP session, connecting (again, after a
// loss) when needed.
func (s *shardConns) get(ctx context.Context, shard string) (*migrate.Conn, error) {
	s.mu.Lock()
	r := s.remotes[shard]
	s.mu.Unlock()
	if r == nil {
		nr, err := s.connect(ctx, shard)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", shard, err)
		}
		if nr == nil {
			return nil, fmt.Errorf("shard %s: the ConnectFunc returned no Remote", shard)
		}
		s.mu.Lock()
		if r = s.remotes[shard]; r == nil {
			r, s.remotes[shard] = nr, nr
			nr = nil
		}
		s.mu.Unlock()
		if nr != nil { // another goroutine connected first
			nr.Destroy(ctx)
		}
	}
	if r.view {
		return nil, fmt.Errorf("shard %s: the ConnectFunc returned a scope's view, not a Remote", shard)
	}
	l, err := r.core.ensure(ctx, "migrate")
	if err != nil {
		return nil, fmt.Errorf("shard %s: %w", shard, err)
	}
	// Our daemon presents its workspace (or static scope) as "/" and a
	// directory under it as "/dir". Paths go out relative to that root:
	// an absolute path could be taken for a host path under the daemon's
	// own root directory.
	return &migrate.Conn{Shard: shard, SFTP: l.sftp, Base: strings.Trim(l.presentedRoot, "/")}, nil
}

// close destroys every Remote.
func (s *shardConns) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.remotes {
		r.Destroy(context.Background())
	}
	s.remotes = map[string]*Remote{}
}
