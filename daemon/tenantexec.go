package daemon

import (
	"errors"
	"fmt"
	"sync"

	agentbe "github.com/agentbe/agent-backend"
)

// tenantExecs holds one tenantExec per tenant of the loaded tenants file,
// by name: the resource group bounding the sum of the tenant's commands
// and the per-command limits and network mode of every scope its
// requests open.
type tenantExecs struct {
	mu     sync.Mutex
	byName map[string]*tenantExec
	limits bool // some tenant has a limit
}

// tenantLimits is t's entry of the tenants file as resource limits and a
// network mode.
func tenantLimits(t *Tenant) (agentbe.ResourceLimits, agentbe.Network) {
	mem, pids, cpu, timeout := t.Limits()
	return agentbe.ResourceLimits{MemoryBytes: mem, Pids: pids, CPU: cpu, Timeout: timeout}, agentbe.Network(t.Network())
}

// apply makes the confinement of every tenant of set: new tenants get a
// group, tenants still there are updated, the groups of tenants no longer
// there are closed (their commands killed). Limits that cannot be
// enforced are an error naming the tenant; then the groups made for new
// tenants are closed again and nothing else has changed, except that
// tenants updated before the failing one keep their new limits.
func (e *tenantExecs) apply(s *Server, set *tenantSet) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	made := map[string]*tenantExec{}
	undo := func() {
		for _, te := range made {
			te.close()
		}
	}
	anyLimits := false
	for _, t := range set.list {
		limits, network := tenantLimits(t)
		anyLimits = anyLimits || !limits.IsZero()
		if te := e.byName[t.name]; te != nil {
			continue
		}
		te, err := s.newTenantExec(t.name, limits, network)
		if err != nil {
			undo()
			return fmt.Errorf("daemon: tenant %s: %w", t.name, err)
		}
		made[t.name] = te
	}
	for _, t := range set.list {
		te := e.byName[t.name]
		if te == nil {
			continue
		}
		limits, network := tenantLimits(t)
		if err := te.update(limits, network); err != nil {
			undo()
			return fmt.Errorf("daemon: tenant %s: %w", t.name, err)
		}
	}
	kept := map[string]*tenantExec{}
	for _, t := range set.list {
		if te := made[t.name]; te != nil {
			kept[t.name] = te
		} else {
			kept[t.name] = e.byName[t.name]
		}
	}
	for name, te := range e.byName {
		if kept[name] == nil {
			te.close()
		}
	}
	e.byName, e.limits = kept, anyLimits
	return nil
}

// errTenantGone refuses a request of a tenant a reload removed while the
// request was being authenticated: its commands would have no limits.
var errTenantGone = errors.New("daemon: the tenant was removed from the tenants file")

// scopeOptions are the options of the scopes of tenant name, or
// errTenantGone for a tenant no longer loaded.
func (e *tenantExecs) scopeOptions(name string) (agentbe.ScopeOptions, error) {
	e.mu.Lock()
	te := e.byName[name]
	e.mu.Unlock()
	if te == nil {
		return agentbe.ScopeOptions{}, errTenantGone
	}
	return te.scopeOptions(), nil
}

// anyLimits reports whether some tenant of the loaded file has a limit.
func (e *tenantExecs) anyLimits() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.limits
}
