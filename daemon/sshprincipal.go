package daemon

// sshConnState is what one /ssh connection was authenticated as at its
// WebSocket upgrade: the tenant (nil for the operator), the X-Scope-Path
// of the upgrade request, and the connection's scope (relative to the
// root, normalized; "" is the whole root) that every channel works in.
type sshConnState struct {
	tenant *Tenant
	header string
	scope  string
}

// channelPrincipal is who a new channel of the connection works as, or
// false when the channel must be refused: the connection's tenant was
// removed from the tenants file (or its token changed) since the upgrade,
// or its scope changed so that the upgrade's X-Scope-Path now lies outside
// it. A tenant whose scope changed works in the new one.
func (s *Server) channelPrincipal(cs *sshConnState) (principal, bool) {
	if cs.tenant == nil {
		return principal{scope: cs.scope}, true
	}
	t := s.currentTenant(cs.tenant)
	if t == nil {
		return principal{}, false
	}
	if t == cs.tenant || t.scope == cs.tenant.scope {
		return principal{tenant: t, scope: cs.scope}, true
	}
	scope, refused := s.narrowScope(principal{tenant: t, scope: t.scope}, cs.header)
	if refused != nil {
		return principal{}, false
	}
	return principal{tenant: t, scope: scope}, true
}
