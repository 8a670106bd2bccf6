package daemon

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	agentbe "github.com/agentbe/agent-backend"
)

// tenantExec confines one tenant's commands: the limits bound each of
// them (over the daemon's Config.ExecLimits, field by field where set) and,
// through the tenant's resource group, all of them together; network ""
// keeps Config.ExecNetwork. Every scope the tenant's requests open gets
// scopeOptions.
//
// The daemon keeps one per tenant for the tenant's life: made when the
// tenants file is loaded (an error then is an exit 1 at start, or, on a
// reload, keeps the old set), updated on a reload that changes the
// tenant, closed when the tenant is removed (which kills its commands
// that still run).
type tenantExec struct {
	s     *Server
	group *agentbe.ResourceGroup
	mu    sync.Mutex
	opts  agentbe.ScopeOptions
}

// newTenantExec makes the confinement of tenant name's commands. Limits
// that cannot be enforced here are an error naming the reason.
func (s *Server) newTenantExec(name string, limits agentbe.ResourceLimits, network agentbe.Network) (*tenantExec, error) {
	g, err := s.local.NewResourceGroup(tenantGroupName(name), limits)
	if err != nil {
		return nil, err
	}
	t := &tenantExec{s: s, group: g, opts: agentbe.ScopeOptions{Group: g, Limits: limits, Network: network}}
	if err := s.checkScopeOptions(t.opts); err != nil {
		g.Close()
		return nil, err
	}
	return t, nil
}

// groupSeq tells apart the groups of daemons (and of their tenants' lives)
// in one process.
var groupSeq atomic.Uint64

// tenantGroupName is the name of a new resource group of tenant name:
// unique to this process and call, so that two daemons on one host, or
// a tenant removed and added again while its old commands are still being
// killed, never share a cgroup.
func tenantGroupName(name string) string {
	return fmt.Sprintf("tenant-%s-%d-%d", name, os.Getpid(), groupSeq.Add(1))
}

// checkScopeOptions checks now, not on a tenant's first request, that a
// scope can be opened with opts (its per-command limits and network mode
// can be enforced).
func (s *Server) checkScopeOptions(opts agentbe.ScopeOptions) error {
	sc, err := s.local.Scope(".", opts)
	if err != nil {
		return err
	}
	return sc.Destroy(context.Background())
}

// scopeOptions are the options of every scope of the tenant.
func (t *tenantExec) scopeOptions() agentbe.ScopeOptions {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.opts
}

// update applies a reloaded tenant's limits and network: at once to the
// sum of its commands, to each command started from now on. On error
// nothing changes.
func (t *tenantExec) update(limits agentbe.ResourceLimits, network agentbe.Network) error {
	opts := agentbe.ScopeOptions{Group: t.group, Limits: limits, Network: network}
	if err := t.s.checkScopeOptions(opts); err != nil {
		return err
	}
	if err := t.group.SetLimits(limits); err != nil {
		return err
	}
	t.mu.Lock()
	t.opts = opts
	t.mu.Unlock()
	return nil
}

// close kills the tenant's running commands and removes its group.
func (t *tenantExec) close() error { return t.group.Close() }
