package agentbe

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"
)

// PoolConfig configures a Pool of backends built from configurations of
// type C (RemoteConfig, LocalConfig, …). Only New is required.
type PoolConfig[C any] struct {
	// New builds a backend from a configuration: the defaults merged with
	// the request's override.
	New func(ctx context.Context, cfg C) (Backend, error)
	// Defaults is the configuration every backend starts from.
	Defaults C
	// Merge combines the defaults with an override; nil means: every
	// non-zero field of the override replaces the defaults' field (maps and
	// slices as a whole): override values take precedence.
	Merge func(defaults, override C) C
	// IdleTimeout is how long a backend nobody holds stays pooled; zero
	// means 5 minutes.
	IdleTimeout time.Duration
	// SweepInterval, when positive, runs Sweep that often in the
	// background until Close.
	SweepInterval time.Duration
	// Shards, when set, are the daemons keys are spread over: each key goes
	// to the shard that rendezvous (highest-random-weight) hashing picks,
	// so a key always lands on the same daemon and adding or removing one
	// moves only that daemon's share (see PlanMigration for moving their
	// files). Place returns the configuration aimed at a shard (for
	// RemoteConfig: its Host and Port); it is required with Shards.
	Shards []string
	Place  func(cfg C, shard string) C
	// Failover lets a key move when its shard is down: the key goes to the
	// shard rendezvous hashing picks among the live ones, and back once its
	// own shard is tried again (after ShardRetry). Its new backend starts
	// empty there, so this suits stateless uses only: with a workspace per
	// daemon, a tenant's files would split across two disks.
	//
	// By default (false) placement is sticky: a key is only ever served by
	// its own shard, and while that shard is down Acquire fails with an
	// error naming it (code CONNECTION_CLOSED, wrapping ErrConnectionClosed
	// and a *ShardError) instead of building the key a backend elsewhere.
	Failover bool
	// NextShards, when set, is the shard list the pool is about to move to
	// (see PlanMigration): Acquire refuses the keys whose shard differs
	// between Shards and NextShards (code CONNECTION_CLOSED, wrapping a
	// *ShardError with Moving set) while the others are served as usual, so
	// that the tenants being moved stay still during their migration. Their
	// backends already pooled are not handed out again; leases held go on
	// until released.
	NextShards []string
	// ShardRetry is how long a shard that could not be reached is left out
	// of service before it is tried again. While it is, a sticky pool
	// refuses its keys without dialling (so a caller does not wait for a
	// connect timeout on every Acquire) and a failover pool sends them to
	// the other shards. Zero means 5 s for a sticky pool (a tenant waits at
	// most that long after its daemon is back) and 30 s with Failover.
	ShardRetry time.Duration
}

// isUsable reports whether the pool may hand b out again: a pool reuses a
// backend only while it is connected (a Remote that lost its daemon is
// replaced; see docs/scaling.md for where a sharded pool places it). A
// pool of Remote backends should therefore connect them in New.
func isUsable(b Backend) bool {
	s := b.Status()
	return s == StatusConnected || s == StatusConnecting
}

// Pool keeps at most one backend per key and hands it to whoever asks for
// that key, counting its users; see docs/scaling.md. It is safe for
// concurrent use.
//
// A backend is built once per key even when many goroutines acquire the key
// at once before it exists (they wait for the one build). A pooled backend
// that is no longer usable is replaced on the next Acquire (or removed by
// Sweep); one that Lease.Destroy asked to destroy is replaced too. A
// replaced backend is never destroyed under its holders: it leaves the pool
// at once and is destroyed when its last lease is released (Stats counts it
// as active until then). Requests without a key get a fresh backend that is
// not pooled: Release destroys it.
//
// With Shards, a backend that could not be built takes its shard out of
// service for ShardRetry; a build that failed because the caller gave up
// (context.Canceled) or because the daemon is full (ErrDaemonFull) does
// not: the shard is alive. A sticky pool (the default) then refuses the
// shard's keys; one with Failover sends them to the other shards, and also
// takes a shard out when a pooled backend of it became unusable. Errors of
// Acquire about a shard wrap a *ShardError naming it.
type Pool[C any] struct {
	cfg   PoolConfig[C]
	mu    sync.Mutex
	m     map[string]*poolEntry
	down  map[string]shardDown // shards out of service
	fresh map[*Lease]struct{}  // unkeyed leases
	// retired are entries out of p.m whose backend is still leased: the
	// last Release destroys it.
	retired map[*poolEntry]struct{}
	done    chan struct{}
	wg      sync.WaitGroup
	shut    bool
}

// poolEntry is a key's backend. An entry whose build failed is removed
// in the same critical section that closes ready, so a ready entry in the
// map always has its backend.
type poolEntry struct {
	ready   chan struct{} // closed once the build finished
	b       Backend
	shard   string
	users   int
	lastUse time.Time
	retired bool // out of p.m, in p.retired while users > 0
}

// Lease is one acquisition of a pooled backend; end it exactly once, with
// Pool.Release or with Destroy. The embedded Backend is shared with the
// other leases of the same key: destroy it through the lease.
type Lease struct {
	Backend
	key       string
	entry     *poolEntry
	owner     leaseOwner // the pool; nil for a Lease the pool did not make
	released  bool
	destroyed bool // ended by Destroy
}

// leaseOwner is the non-generic side of a Pool that Lease.Destroy calls.
type leaseOwner interface {
	destroyLease(ctx context.Context, l *Lease) error
}

// ErrPoolClosed is returned by Acquire after Close.
var ErrPoolClosed = errors.New("agentbe: pool closed")

// ErrLeaseReleased is returned when a lease is released twice or does not
// belong to the pool.
var ErrLeaseReleased = errors.New("agentbe: lease already released or unknown")

// NewPool returns an empty pool.
func NewPool[C any](cfg PoolConfig[C]) (*Pool[C], error) {
	if cfg.New == nil {
		return nil, configErr("PoolConfig.New is required", nil)
	}
	if len(cfg.Shards) > 0 && cfg.Place == nil {
		return nil, configErr("PoolConfig.Place is required with Shards", nil)
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 5 * time.Minute
	}
	if cfg.ShardRetry <= 0 {
		cfg.ShardRetry = 5 * time.Second
		if cfg.Failover {
			cfg.ShardRetry = 30 * time.Second
		}
	}
	if cfg.Merge == nil {
		cfg.Merge = mergeNonZero[C]
	}
	if len(cfg.NextShards) > 0 && len(cfg.Shards) == 0 {
		return nil, configErr("PoolConfig.NextShards needs Shards", nil)
	}
	cfg.Shards = append([]string(nil), cfg.Shards...)
	cfg.NextShards = append([]string(nil), cfg.NextShards...)
	p := &Pool[C]{cfg: cfg, m: map[string]*poolEntry{}, down: map[string]shardDown{},
		fresh: map[*Lease]struct{}{}, retired: map[*poolEntry]struct{}{}, done: make(chan struct{})}
	if cfg.SweepInterval > 0 {
		p.wg.Add(1)
		go p.sweepLoop()
	}
	return p, nil
}

// Acquire returns the backend for key (a fresh, unpooled one when key is
// ""), built from the defaults merged with override (nil: the defaults)
// when it does not exist yet or is no longer usable. The override of a
// later Acquire does not change an existing backend.
func (p *Pool[C]) Acquire(ctx context.Context, key string, override *C) (*Lease, error) {
	if key == "" {
		p.mu.Lock()
		if p.shut {
			p.mu.Unlock()
			return nil, ErrPoolClosed
		}
		p.mu.Unlock()
		b, err := p.cfg.New(ctx, p.config(override))
		if err != nil {
			return nil, err
		}
		l := &Lease{Backend: b, owner: p}
		p.mu.Lock()
		if p.shut {
			p.mu.Unlock()
			b.Destroy(context.WithoutCancel(ctx))
			return nil, ErrPoolClosed
		}
		p.fresh[l] = struct{}{}
		p.mu.Unlock()
		return l, nil
	}
	if err := p.moving(key); err != nil {
		return nil, err
	}
	for {
		p.mu.Lock()
		if p.shut {
			p.mu.Unlock()
			return nil, ErrPoolClosed
		}
		e, ok := p.m[key]
		if ok {
			select {
			case <-e.ready:
				if isUsable(e.b) {
					e.users++
					p.mu.Unlock()
					return &Lease{Backend: e.b, key: key, entry: e, owner: p}, nil
				}
				// A dead backend: replace it.
				idle := p.retireLocked(key, e, true)
				p.mu.Unlock()
				if idle != nil {
					idle.Destroy(context.WithoutCancel(ctx))
				}
				continue
			default:
				p.mu.Unlock()
				select {
				case <-e.ready:
					continue
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		}
		e = &poolEntry{ready: make(chan struct{}), users: 1}
		if len(p.cfg.Shards) > 0 {
			e.shard = p.pickShard(key)
			if d, ok := p.downLocked(e.shard); ok && !p.cfg.Failover {
				p.mu.Unlock()
				return nil, shardFailure(key, e.shard, d.cause, true)
			}
		}
		p.m[key] = e
		p.mu.Unlock()

		b, err := p.build(ctx, key, e, override)
		p.mu.Lock()
		e.b = b
		close(e.ready)
		if err != nil {
			if p.m[key] == e {
				delete(p.m, key)
			}
			gaveUp := errors.Is(ctx.Err(), context.Canceled)
			down := !errors.Is(err, ErrDaemonFull) && !gaveUp
			if down {
				p.markDownLocked(e.shard, err)
			}
			p.mu.Unlock()
			if e.shard != "" && !gaveUp {
				err = shardFailure(key, e.shard, err, down)
			}
			return nil, err
		}
		if p.shut {
			p.mu.Unlock()
			b.Destroy(context.WithoutCancel(ctx))
			return nil, ErrPoolClosed
		}
		p.mu.Unlock()
		return &Lease{Backend: b, key: key, entry: e, owner: p}, nil
	}
}

// moving refuses key when NextShards gives it another shard.
func (p *Pool[C]) moving(key string) error {
	if len(p.cfg.NextShards) == 0 {
		return nil
	}
	from, to := rendezvous(key, p.cfg.Shards), rendezvous(key, p.cfg.NextShards)
	if from == to {
		return nil
	}
	return &Error{Code: CodeConnectionClosed, Op: "acquire",
		Err: &ShardError{Key: key, Shard: from, Moving: true, Err: fmt.Errorf("%w to %s", ErrTenantMoving, to)}}
}

// build makes e's backend. If New, Merge or Place panics, e leaves the
// pool and its waiters go on (to build again) before the panic does.
func (p *Pool[C]) build(ctx context.Context, key string, e *poolEntry, override *C) (Backend, error) {
	done := false
	defer func() {
		if done {
			return
		}
		p.mu.Lock()
		if p.m[key] == e {
			delete(p.m, key)
		}
		close(e.ready)
		p.mu.Unlock()
	}()
	cfg := p.config(override)
	if e.shard != "" {
		cfg = p.cfg.Place(cfg, e.shard)
	}
	b, err := p.cfg.New(ctx, cfg)
	done = true
	return b, err
}

// retireLocked takes e, the entry of key, out of the pool; dead says that
// its backend became unusable, which with Failover takes its shard out of
// the rendezvous too (a sticky pool lets the next build tell whether the
// shard is down: the backend may have lost only its own connection). It
// returns e's backend when nobody holds it, for the caller to
// destroy once p.mu is released; otherwise the last Release destroys it.
// Callers hold p.mu.
func (p *Pool[C]) retireLocked(key string, e *poolEntry, dead bool) Backend {
	if p.m[key] == e {
		delete(p.m, key)
	}
	if dead && p.cfg.Failover {
		p.markDownLocked(e.shard, connClosed("acquire", "", errBackendLost))
	}
	if e.retired || p.shut { // already retired, or Close destroyed it
		return nil
	}
	if e.users == 0 {
		return e.b
	}
	e.retired = true
	p.retired[e] = struct{}{}
	return nil
}

// markDownLocked takes shard out of service for ShardRetry; cause is why.
// Callers hold p.mu.
func (p *Pool[C]) markDownLocked(shard string, cause error) {
	if shard != "" {
		p.down[shard] = shardDown{until: time.Now().Add(p.cfg.ShardRetry), cause: cause}
	}
}

// downLocked reports whether shard is out of service, and why. Callers
// hold p.mu.
func (p *Pool[C]) downLocked(shard string) (shardDown, bool) {
	d, ok := p.down[shard]
	if !ok {
		return d, false
	}
	if time.Now().After(d.until) {
		delete(p.down, shard)
		return d, false
	}
	return d, true
}

// dropLocked ends one lease of e and returns e's backend when that was the
// last lease of a retired entry, for the caller to destroy once p.mu is
// released. Callers hold p.mu.
func (p *Pool[C]) dropLocked(e *poolEntry) Backend {
	e.users--
	e.lastUse = time.Now()
	if e.retired && e.users == 0 {
		e.retired = false
		delete(p.retired, e)
		return e.b
	}
	return nil
}

// config is the defaults merged with override (nil: the defaults). It is
// computed only when a backend is built: an existing one ignores it.
func (p *Pool[C]) config(override *C) C {
	if override == nil {
		return p.cfg.Defaults
	}
	return p.cfg.Merge(p.cfg.Defaults, *override)
}

// pickShard returns the shard of key: its own one in a sticky pool; with
// Failover, the one rendezvous picks among the live shards (all shards
// when none is live). Callers hold p.mu.
func (p *Pool[C]) pickShard(key string) string {
	if !p.cfg.Failover {
		return rendezvous(key, p.cfg.Shards)
	}
	live := make([]string, 0, len(p.cfg.Shards))
	for _, s := range p.cfg.Shards {
		if _, down := p.downLocked(s); !down {
			live = append(live, s)
		}
	}
	if len(live) == 0 {
		live = p.cfg.Shards
	}
	return rendezvous(key, live)
}

// Release ends a lease. A pooled backend stays in the pool (idle once its
// last lease is released); an unkeyed one is destroyed, and so is one that
// left the pool (replaced, or destroyed through another lease) when this
// was its last lease. Releasing a lease twice, or one of another pool, is
// an error; releasing one that Destroy ended does nothing.
func (p *Pool[C]) Release(l *Lease) error {
	if l == nil || l.owner != leaseOwner(p) {
		return ErrLeaseReleased
	}
	p.mu.Lock()
	if l.destroyed {
		p.mu.Unlock()
		return nil
	}
	if l.released {
		p.mu.Unlock()
		return ErrLeaseReleased
	}
	if l.entry == nil {
		if _, ok := p.fresh[l]; !ok {
			p.mu.Unlock()
			return ErrLeaseReleased
		}
		delete(p.fresh, l)
		l.released = true
		p.mu.Unlock()
		return l.Backend.Destroy(context.Background())
	}
	l.released = true
	last := p.dropLocked(l.entry)
	p.mu.Unlock()
	if last != nil {
		return last.Destroy(context.Background())
	}
	return nil
}

// Destroy ends the lease and takes its backend out of the pool, so that the
// next Acquire of the key builds a new one. The backend itself is destroyed
// once no lease holds it: at once when this was the only one, else when
// the last other holder releases it (their calls go on working until
// then). An unkeyed lease's backend is destroyed at once. Destroy is
// idempotent; Release after it does nothing, Destroy after Release fails
// with ErrLeaseReleased.
func (l *Lease) Destroy(ctx context.Context) error {
	if l.owner == nil {
		return ErrLeaseReleased
	}
	return l.owner.destroyLease(ctx, l)
}

func (p *Pool[C]) destroyLease(ctx context.Context, l *Lease) error {
	p.mu.Lock()
	if l.destroyed {
		p.mu.Unlock()
		return nil
	}
	if l.released {
		p.mu.Unlock()
		return ErrLeaseReleased
	}
	l.released, l.destroyed = true, true
	var victim Backend
	if l.entry == nil {
		delete(p.fresh, l)
		victim = l.Backend
	} else if victim = p.dropLocked(l.entry); victim == nil {
		victim = p.retireLocked(l.key, l.entry, false)
	}
	p.mu.Unlock()
	if victim != nil {
		return victim.Destroy(ctx)
	}
	return nil
}

// With acquires key, runs fn with the backend and releases it, also when fn
// returns an error or panics (the panic goes on after the release). The
// backend may be shared with other holders of key: fn must not destroy it
// (Acquire and Lease.Destroy take a backend out of the pool safely).
func (p *Pool[C]) With(ctx context.Context, key string, override *C, fn func(Backend) error) (err error) {
	l, err := p.Acquire(ctx, key, override)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := p.Release(l); err == nil && rerr != nil {
			err = rerr
		}
	}()
	return fn(l.Backend)
}

// PoolStats counts a pool's backends.
type PoolStats struct {
	Total  int // pooled backends plus unkeyed ones in use
	Active int // backends with at least one lease
	Idle   int // pooled backends nobody holds
}

// Stats returns the current counts.
func (p *Pool[C]) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.fresh) + len(p.retired) // in use, out of the pool
	s := PoolStats{Total: n, Active: n}
	for _, e := range p.m {
		s.Total++
		if e.users > 0 {
			s.Active++
		} else {
			s.Idle++
		}
	}
	return s
}

// Sweep removes from the pool the backends nobody has held for
// IdleTimeout and those no longer usable, and returns how many it removed.
// It treats an unusable backend as Acquire does: with Failover its shard is
// left out of the rendezvous for ShardRetry, and a backend still leased is
// destroyed only when its last lease is released.
func (p *Pool[C]) Sweep() int {
	now := time.Now()
	var victims []Backend
	n := 0
	p.mu.Lock()
	for k, e := range p.m {
		select {
		case <-e.ready:
		default:
			continue
		}
		dead := !isUsable(e.b)
		if dead || e.users == 0 && now.Sub(e.lastUse) >= p.cfg.IdleTimeout {
			n++
			if b := p.retireLocked(k, e, dead); b != nil {
				victims = append(victims, b)
			}
		}
	}
	p.mu.Unlock()
	for _, b := range victims {
		b.Destroy(context.Background())
	}
	return n
}

func (p *Pool[C]) sweepLoop() {
	defer p.wg.Done()
	t := time.NewTicker(p.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.Sweep()
		}
	}
}

// Close stops the sweeper and destroys every backend, pooled or leased;
// later Acquires fail with ErrPoolClosed. It is idempotent.
func (p *Pool[C]) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.shut {
		p.mu.Unlock()
		return nil
	}
	p.shut = true
	close(p.done)
	var all []Backend
	for _, e := range p.m {
		select {
		case <-e.ready:
			all = append(all, e.b)
		default: // its builder destroys it when it sees shut
		}
	}
	for l := range p.fresh {
		all = append(all, l.Backend)
	}
	for e := range p.retired {
		e.retired = false // destroyed here, not by its last Release
		all = append(all, e.b)
	}
	p.m, p.fresh, p.retired = map[string]*poolEntry{}, map[*Lease]struct{}{}, map[*poolEntry]struct{}{}
	p.mu.Unlock()
	p.wg.Wait()
	var first error
	for _, b := range all {
		if err := b.Destroy(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// mergeNonZero copies every non-zero field of override over defaults. A
// non-struct C is replaced whole when the override is non-zero.
func mergeNonZero[C any](defaults, override C) C {
	dv, ov := reflect.ValueOf(&defaults).Elem(), reflect.ValueOf(override)
	if dv.Kind() != reflect.Struct {
		if !ov.IsZero() {
			return override
		}
		return defaults
	}
	for i := 0; i < dv.NumField(); i++ {
		if f := ov.Field(i); dv.Field(i).CanSet() && !f.IsZero() {
			dv.Field(i).Set(f)
		}
	}
	return defaults
}

// String describes the lease for logs.
func (l *Lease) String() string { return fmt.Sprintf("lease(%q)", l.key) }
