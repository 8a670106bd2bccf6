package acp

import (
	"context"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// Defaults for ProxyConfig's zero fields.
const (
	DefaultRequestTimeout  = 5 * time.Minute
	DefaultInstallTimeout  = 10 * time.Minute
	DefaultReplayEvents    = 4096
	DefaultReplayBytes     = 16 << 20
	DefaultMaxMessageBytes = 16 << 20
	DefaultMaxInstances    = 64
	DefaultStopWait        = 5 * time.Second
)

// ProxyConfig configures a Proxy. The zero value is usable.
type ProxyConfig struct {
	// RequestTimeout bounds the wait for an agent's response to a request
	// (and for a write to its stdin); the POST then answers 504. Zero means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// InstallTimeout bounds an agent's install command. Zero means
	// DefaultInstallTimeout.
	InstallTimeout time.Duration
	// ReplayEvents and ReplayBytes bound each instance's SSE replay ring.
	// Zero means DefaultReplayEvents / DefaultReplayBytes.
	ReplayEvents int
	ReplayBytes  int
	// MaxMessageBytes bounds one JSON-RPC message in either direction; a
	// longer agent line is dropped (and logged). Zero means
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
	// MaxInstances bounds the number of live instances (each one a
	// process). Zero means DefaultMaxInstances.
	MaxInstances int
	// StopWait bounds how long Delete waits for a killed process to be
	// reaped. Zero means DefaultStopWait.
	StopWait time.Duration
	// SecretEnv names host variables never passed to an agent even if it
	// declares them (e.g. the daemon's token variable). The daemon's own
	// token never reaches agents anyway: they start from the backend's
	// clean environment.
	SecretEnv []string
	// Logger receives diagnostics; nil means slog.Default().
	Logger *slog.Logger
	// OnInstance, when set, hears of every instance created and ended,
	// with the context of the request that caused it (context.Background
	// for an agent that failed to start, or a proxy closed). It must be
	// quick.
	OnInstance func(ctx context.Context, ev InstanceEvent)
}

// InstanceEvent is an instance created or ended, as
// ProxyConfig.OnInstance hears of it.
type InstanceEvent struct {
	// Started is true for a new instance (its process starting in the
	// background), false for one that ended.
	Started  bool
	ServerID string
	Agent    string
	// Reason says why an instance ended: "deleted", "failed" (its agent
	// could not be installed or started) or "closed" (the proxy was
	// closed).
	Reason string
	// Lifetime is how long an ended instance lived.
	Lifetime time.Duration
}

func (c *ProxyConfig) requestTimeout() time.Duration {
	return orDefault(c.RequestTimeout, DefaultRequestTimeout)
}
func (c *ProxyConfig) installTimeout() time.Duration {
	return orDefault(c.InstallTimeout, DefaultInstallTimeout)
}
func (c *ProxyConfig) maxMessageBytes() int {
	return orDefault(c.MaxMessageBytes, DefaultMaxMessageBytes)
}
func (c *ProxyConfig) stopWait() time.Duration { return orDefault(c.StopWait, DefaultStopWait) }
func (c *ProxyConfig) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

func orDefault[T int | time.Duration | int64](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

// Partition is a set of server ids of its own: an instance of one
// partition is invisible from every other (ids, listings, conflicts and
// streams), and two partitions may use the same id. The daemon gives each
// tenant one. The zero value is the default partition, without a cap of
// its own.
type Partition struct {
	// Key names the partition; "" is the default one.
	Key string
	// MaxInstances bounds the partition's live instances (starting one
	// more answers 429); 0 means only ProxyConfig.MaxInstances applies.
	MaxInstances int
}

// instKey is an instance's key: its partition and server id.
type instKey struct{ part, id string }

// Proxy is the transport-free ACP proxy core: the set of instances keyed
// by partition and server ID. It is safe for concurrent use. Its exported
// methods work on the default partition.
type Proxy struct {
	cfg     ProxyConfig
	mu      sync.Mutex
	insts   map[instKey]*Instance
	changed chan struct{} // closed and replaced when an instance is added
	closed  bool
}

// NewProxy returns an empty proxy.
func NewProxy(cfg ProxyConfig) *Proxy {
	return &Proxy{cfg: cfg, insts: map[instKey]*Instance{}, changed: make(chan struct{})}
}

// Bootstrap returns the instance for serverID, creating it for agent a on
// backend b when it does not exist (the process starts in the background;
// the instance is visible at once). release is called when the instance
// ends, or at once when an existing instance is returned. An existing
// instance bound to another agent, or started on a backend with another
// root (another scope, which must not reach it), is a 409 problem.
func (p *Proxy) Bootstrap(serverID string, a Agent, b agentbe.Backend, release func()) (*Instance, error) {
	return p.bootstrap(context.Background(), Partition{}, serverID, a, b, release)
}

// bootstrap is Bootstrap in partition part on behalf of the request ctx
// belongs to; beyond part's cap of instances it answers 429.
func (p *Proxy) bootstrap(rctx context.Context, part Partition, serverID string, a Agent, b agentbe.Backend, release func()) (*Instance, error) {
	if release == nil {
		release = func() {}
	}
	root := b.RootDir()
	key := instKey{part.Key, serverID}
	p.mu.Lock()
	if in, ok := p.insts[key]; ok {
		p.mu.Unlock()
		release()
		switch {
		case in.root != root:
			return nil, conflict("server '" + serverID + "' is in use in another scope")
		case in.agent != a.ID:
			return nil, agentConflict(serverID, in.agent, a.ID)
		}
		return in, nil
	}
	if p.closed {
		p.mu.Unlock()
		release()
		return nil, problem(http.StatusServiceUnavailable, "unavailable", "Service Unavailable", "proxy closed")
	}
	if len(p.insts) >= orDefault(p.cfg.MaxInstances, DefaultMaxInstances) {
		p.mu.Unlock()
		release()
		return nil, problem(http.StatusTooManyRequests, "too_many_instances", "Too Many Instances",
			"too many ACP instances; DELETE one first")
	}
	if part.MaxInstances > 0 && p.countLocked(part.Key) >= part.MaxInstances {
		p.mu.Unlock()
		release()
		return nil, problem(http.StatusTooManyRequests, "too_many_instances", "Too Many Instances",
			"this tenant has "+strconv.Itoa(part.MaxInstances)+" ACP instances already (its limit); DELETE one first")
	}
	// The instance outlives the request, but keeps its values (e.g. the
	// request id its agent's install command is audited with).
	ctx, cancel := context.WithCancel(context.WithoutCancel(rctx))
	in := &Instance{id: serverID, part: part.Key, agent: a.ID, root: root, created: time.Now(), cfg: &p.cfg,
		ring:   NewRing(orDefault(p.cfg.ReplayEvents, DefaultReplayEvents), orDefault(p.cfg.ReplayBytes, DefaultReplayBytes)),
		stderr: newTailBuffer(8 << 10), ready: make(chan struct{}), exited: make(chan struct{}),
		ctx: ctx, cancel: cancel, release: release, pending: map[string]chan []byte{}}
	p.insts[key] = in
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	if p.cfg.OnInstance != nil {
		p.cfg.OnInstance(rctx, InstanceEvent{Started: true, ServerID: serverID, Agent: a.ID})
	}
	go in.start(a, b, p.cfg.SecretEnv, func() { p.forget(context.Background(), in, "failed") })
	return in, nil
}

// forget removes in (if still registered) and releases it; the removal is
// reported to OnInstance with reason, on behalf of the request ctx
// belongs to.
func (p *Proxy) forget(ctx context.Context, in *Instance, reason string) {
	p.mu.Lock()
	key := instKey{in.part, in.id}
	removed := p.insts[key] == in
	if removed {
		delete(p.insts, key)
	}
	p.mu.Unlock()
	in.close(p.cfg.stopWait())
	if removed {
		p.ended(ctx, in, reason)
	}
}

// ended reports the end of in to OnInstance.
func (p *Proxy) ended(ctx context.Context, in *Instance, reason string) {
	if p.cfg.OnInstance != nil {
		p.cfg.OnInstance(ctx, InstanceEvent{ServerID: in.id, Agent: in.agent, Reason: reason, Lifetime: time.Since(in.created)})
	}
}

// countLocked counts the instances of partition part; p.mu is held.
func (p *Proxy) countLocked(part string) int {
	n := 0
	for k := range p.insts {
		if k.part == part {
			n++
		}
	}
	return n
}

// Get returns the instance for serverID, or nil.
func (p *Proxy) Get(serverID string) *Instance { return p.get("", serverID) }

// get returns the instance for serverID in partition part, or nil.
func (p *Proxy) get(part, serverID string) *Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.insts[instKey{part, serverID}]
}

// WaitFor returns the instance for serverID, waiting up to d for it to be
// created (a client may open the SSE stream a moment before its first POST
// reaches the server). It returns nil when none appeared.
func (p *Proxy) WaitFor(ctx context.Context, serverID string, d time.Duration) *Instance {
	return p.waitFor(ctx, "", serverID, d)
}

// waitFor is WaitFor in partition part.
func (p *Proxy) waitFor(ctx context.Context, part, serverID string, d time.Duration) *Instance {
	t := time.NewTimer(d)
	defer t.Stop()
	key := instKey{part, serverID}
	for {
		p.mu.Lock()
		in, ch := p.insts[key], p.changed
		p.mu.Unlock()
		if in != nil {
			return in
		}
		select {
		case <-ch:
		case <-t.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// Delete stops and forgets the instance; deleting a missing one is not an
// error. It returns once the process is reaped, or after StopWait.
func (p *Proxy) Delete(serverID string) {
	if in := p.Get(serverID); in != nil {
		p.forget(context.Background(), in, "deleted")
	}
}

// ListPartition describes the instances of partition key, sorted by
// creation time.
func (p *Proxy) ListPartition(key string) []InstanceInfo {
	return p.list(func(in *Instance) bool { return in.part == key })
}

// DeletePartition stops and forgets every instance of partition key (the
// daemon's, of a tenant removed from its tenants file): their streams end
// and their processes are killed and reaped (each within StopWait).
func (p *Proxy) DeletePartition(key string) {
	p.mu.Lock()
	var gone []*Instance
	for k, in := range p.insts {
		if k.part == key {
			gone = append(gone, in)
		}
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, in := range gone {
		wg.Add(1)
		go func() { defer wg.Done(); p.forget(context.Background(), in, "deleted") }()
	}
	wg.Wait()
}

// List describes every instance, sorted by creation time.
func (p *Proxy) List() []InstanceInfo { return p.list(func(*Instance) bool { return true }) }

// list describes the instances keep accepts, sorted by creation time.
func (p *Proxy) list(keep func(*Instance) bool) []InstanceInfo {
	p.mu.Lock()
	all := make([]*Instance, 0, len(p.insts))
	for _, in := range p.insts {
		if keep(in) {
			all = append(all, in)
		}
	}
	p.mu.Unlock()
	out := make([]InstanceInfo, 0, len(all))
	for _, in := range all {
		out = append(out, in.Info())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAtMs != out[j].CreatedAtMs {
			return out[i].CreatedAtMs < out[j].CreatedAtMs
		}
		return out[i].ServerID < out[j].ServerID
	})
	return out
}

// Close deletes every instance and refuses new ones.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	all := p.insts
	p.insts = map[instKey]*Instance{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, in := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.close(p.cfg.stopWait())
			p.ended(context.Background(), in, "closed")
		}()
	}
	wg.Wait()
}
