package daemon

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	agentbe "github.com/agentbe/agent-backend"
)

// loadTenantSet loads cfg.TenantsFile and checks it against the rest of
// cfg: no static scope, no tenant holding the operator's token.
func loadTenantSet(cfg Config) (*tenantSet, error) {
	if cfg.ScopePath != "" {
		return nil, fmt.Errorf("daemon: %w: a tenants file and a static scope (ScopePath) exclude each other", agentbe.ErrInvalidConfig)
	}
	list, err := LoadTenants(cfg.TenantsFile)
	if err != nil {
		return nil, err
	}
	if cfg.AuthToken != "" {
		op := sha256.Sum256([]byte(cfg.AuthToken))
		for _, t := range list {
			if subtle.ConstantTimeCompare(op[:], t.hash[:]) == 1 {
				return nil, fmt.Errorf("daemon: %w: tenant %s: tokenSha256 is the operator token's", ErrInvalidTenants, t.name)
			}
		}
	}
	return &tenantSet{list: list}, nil
}

// requireKernelIsolation refuses tenants on a workspace whose commands are
// not confined by the kernel: software or no isolation cannot keep one
// tenant's commands out of another's files.
func requireKernelIsolation(local *agentbe.Local) error {
	if m := local.Isolation(); m != agentbe.IsolationBwrap {
		return fmt.Errorf("daemon: %w: tenants require bwrap isolation (commands must be confined to the tenant's scope by the kernel), but isolation is %q: install bubblewrap, or run with --isolation bwrap to see why it is not usable",
			agentbe.ErrInvalidConfig, m)
	}
	return nil
}

// errNoTenants is ReloadTenants' error on a daemon without a tenants file.
var errNoTenants = errors.New("daemon: no tenants file is configured")

// ReloadTenants reads the tenants file again and, when it is valid,
// replaces the tenants at once for every new request, SSH channel and ACP
// message; live connections stay. A removed tenant's token is refused from
// then on (401), and its ACP agents are stopped; a changed scope applies
// to new requests and channels.
// When the file is not valid the tenants stay as they were and the error
// says why.
func (s *Server) ReloadTenants() error {
	if s.cfg.TenantsFile == "" {
		return errNoTenants
	}
	set, err := loadTenantSet(s.cfg)
	if err != nil {
		return err
	}
	if err := s.execs.apply(s, set); err != nil {
		return err
	}
	old := s.tenants.Swap(set)
	// The ACP instances of a tenant no longer in the file could never be
	// reached again, yet would hold slots of the global cap: they are
	// stopped. A tenant that is still there (its token changed or not)
	// keeps its own.
	if old != nil {
		kept := map[string]bool{}
		for _, t := range set.list {
			kept[t.name] = true
		}
		for _, t := range old.list {
			if !kept[t.name] {
				go s.acp.Proxy().DeletePartition(acpPartitionKey(t))
			}
		}
	}
	return nil
}

// reloadOnSIGHUP reloads the tenants file on every SIGHUP until the
// returned function is called. A failed reload is logged at ERROR and
// keeps the tenants loaded before.
func (s *Server) reloadOnSIGHUP() (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				if err := s.ReloadTenants(); err != nil {
					s.cfg.Logger.Error("daemon: tenants file not reloaded; the tenants loaded before stay", "err", err)
					continue
				}
				s.cfg.Logger.Info("daemon: tenants file reloaded", "tenants", len(s.tenants.Load().list))
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}

// currentTenant returns the tenant of the loaded set that t still is (the
// same name and token), or nil when t was removed or its token changed.
func (s *Server) currentTenant(t *Tenant) *Tenant {
	set := s.tenants.Load()
	if set == nil {
		return nil
	}
	for _, c := range set.list {
		if c.name == t.name {
			if c.hash == t.hash {
				return c
			}
			return nil
		}
	}
	return nil
}
