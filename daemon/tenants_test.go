package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// sumHex is the tokenSha256 of token.
func sumHex(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}

// tenantJSON is one tenant entry; extra is spliced in after the scope.
func tenantJSON(name, token, scope, extra string) string {
	return `{"name":"` + name + `","tokenSha256":"` + sumHex(token) + `","scope":"` + scope + `"` + extra + `}`
}

func tenantsDoc(entries ...string) string {
	return `{"tenants":[` + strings.Join(entries, ",") + `]}`
}

func TestParseTenants(t *testing.T) {
	alice := tenantJSON("alice", "alice-token", "users/alice", "")
	cases := []struct {
		name, doc string
		wantErr   string // "" = valid
	}{
		{"empty list", `{"tenants":[]}`, ""},
		{"two tenants", tenantsDoc(alice, tenantJSON("bob", "bob-token", "users/bob", "")), ""},
		{"full entry", tenantsDoc(tenantJSON("a.b_c-1", "t", "/users/x/", `,"limits":{"memoryBytes":268435456,"pids":64,"cpu":1.5,`+
			`"timeoutSeconds":600,"sshConns":4,"acpInstances":4,"mcpInFlight":16,"uploadsInFlight":2,"processes":16},"network":"none"`)), ""},
		{"upper-case hex", strings.Replace(tenantsDoc(alice), sumHex("alice-token"), strings.ToUpper(sumHex("alice-token")), 1), ""},
		{"siblings sharing a prefix", tenantsDoc(tenantJSON("a", "1", "users/al", ""), tenantJSON("b", "2", "users/alice", "")), ""},
		{"not JSON", `{"tenants":`, "unexpected EOF"},
		{"trailing data", `{"tenants":[]} {}`, "data after"},
		{"unknown top-level field", `{"tenants":[],"extra":1}`, `unknown field "extra"`},
		{"unknown tenant field", tenantsDoc(tenantJSON("a", "1", "s", `,"scopes":"x"`)), `unknown field "scopes"`},
		{"misspelt limit", tenantsDoc(tenantJSON("a", "1", "s", `,"limits":{"memoryByte":1}`)), `unknown field "memoryByte"`},
		{"no name", tenantsDoc(tenantJSON("", "1", "s", "")), "name \"\""},
		{"bad name", tenantsDoc(tenantJSON("a/b", "1", "s", "")), "must be 1 to 64 characters"},
		{"long name", tenantsDoc(tenantJSON(strings.Repeat("n", 65), "1", "s", "")), "must be 1 to 64"},
		{"duplicate name", tenantsDoc(tenantJSON("a", "1", "s", ""), tenantJSON("a", "2", "t", "")), "name used twice"},
		{"short hash", `{"tenants":[{"name":"a","tokenSha256":"abcd","scope":"s"}]}`, "64 hex digits"},
		{"non-hex hash", `{"tenants":[{"name":"a","tokenSha256":"` + strings.Repeat("zz", 32) + `","scope":"s"}]}`, "64 hex digits"},
		{"empty token's hash", `{"tenants":[{"name":"a","tokenSha256":"` + sumHex("") + `","scope":"s"}]}`, "empty token"},
		{"duplicate hash", tenantsDoc(tenantJSON("a", "1", "s", ""), tenantJSON("b", "1", "t", "")), "another tenant's too"},
		{"root scope", tenantsDoc(tenantJSON("a", "1", "", "")), "not the root"},
		{"slash scope", tenantsDoc(tenantJSON("a", "1", "/", "")), "not the root"},
		{"dot scope", tenantsDoc(tenantJSON("a", "1", ".", "")), "not the root"},
		{"traversal scope", tenantsDoc(tenantJSON("a", "1", "users/../etc", "")), "path traversal"},
		{"control character scope", tenantsDoc(tenantJSON("a", "1", `users/\u0001x`, "")), "control characters"},
		{"equal scopes", tenantsDoc(tenantJSON("a", "1", "users/x", ""), tenantJSON("b", "2", "/users/x/", "")), "overlaps tenant a"},
		{"nested scope", tenantsDoc(tenantJSON("a", "1", "users", ""), tenantJSON("b", "2", "users/x", "")), "overlaps"},
		{"enclosing scope", tenantsDoc(tenantJSON("a", "1", "users/x/y", ""), tenantJSON("b", "2", "users/x", "")), "overlaps"},
		{"negative memory", tenantsDoc(tenantJSON("a", "1", "s", `,"limits":{"memoryBytes":-1}`)), "memoryBytes must not be negative"},
		{"negative sshConns", tenantsDoc(tenantJSON("a", "1", "s", `,"limits":{"sshConns":-2}`)), "sshConns must not be negative"},
		{"negative cpu", tenantsDoc(tenantJSON("a", "1", "s", `,"limits":{"cpu":-0.5}`)), "cpu must be"},
		{"huge timeout", tenantsDoc(tenantJSON("a", "1", "s", `,"limits":{"timeoutSeconds":1e300}`)), "too large"},
		{"fractional pids", tenantsDoc(tenantJSON("a", "1", "s", `,"limits":{"pids":1.5}`)), "cannot unmarshal"},
		{"bad network", tenantsDoc(tenantJSON("a", "1", "s", `,"network":"bridge"`)), `network "bridge"`},
	}
	for _, c := range cases {
		ts, err := ParseTenants([]byte(c.doc))
		if c.wantErr == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrInvalidTenants) || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: %v (%d tenants), want an error with %q", c.name, err, len(ts), c.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), sumHex("1")) {
			t.Errorf("%s: the error shows a token hash: %v", c.name, err)
		}
	}
}

func TestTenantAccessors(t *testing.T) {
	ts, err := ParseTenants([]byte(tenantsDoc(tenantJSON("alice", "tok", "/users/alice/", `,"limits":{"memoryBytes":1024,"pids":8,`+
		`"cpu":0.5,"timeoutSeconds":1.5,"sshConns":2},"network":"none"`))))
	if err != nil || len(ts) != 1 {
		t.Fatal(ts, err)
	}
	a := ts[0]
	mem, pids, cpu, timeout := a.Limits()
	if a.Name() != "alice" || a.Scope() != "users/alice" || a.Network() != "none" || mem != 1024 || pids != 8 ||
		cpu != 0.5 || timeout != 1500*time.Millisecond || a.TenantLimits().SSHConns != 2 {
		t.Errorf("%s %s %s %d %d %v %v %+v", a.Name(), a.Scope(), a.Network(), mem, pids, cpu, timeout, a.TenantLimits())
	}
}

func TestLoadTenantsFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadTenants(filepath.Join(dir, "missing.json")); !errors.Is(err, ErrInvalidTenants) {
		t.Errorf("missing file: %v", err)
	}
	p := filepath.Join(dir, "t.json")
	os.WriteFile(p, []byte(tenantsDoc(tenantJSON("a", "1", "s", ""))), 0o600)
	if ts, err := LoadTenants(p); err != nil || len(ts) != 1 {
		t.Errorf("load: %v %v", ts, err)
	}
}

func FuzzParseTenants(f *testing.F) {
	f.Add([]byte(tenantsDoc(tenantJSON("alice", "a", "users/alice", `,"limits":{"sshConns":1}`), tenantJSON("bob", "b", "users/bob", ""))))
	f.Add([]byte(`{"tenants":[{"name":"a","tokenSha256":"","scope":"../x"}]}`))
	f.Add([]byte(`{"tenants":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := ParseTenants(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidTenants) {
				t.Fatalf("error not wrapping ErrInvalidTenants: %v", err)
			}
			return
		}
		// Whatever was accepted keeps the rules.
		for i, a := range ts {
			if !validTenantName(a.name) || a.scope == "" {
				t.Fatalf("accepted %q scope %q", a.name, a.scope)
			}
			if n, err := NormalizeScopePath(a.scope); err != nil || n != a.scope {
				t.Fatalf("scope %q not normalized", a.scope)
			}
			for _, b := range ts[i+1:] {
				if a.name == b.name || a.hash == b.hash || scopeWithin(a.scope, b.scope) || scopeWithin(b.scope, a.scope) {
					t.Fatalf("accepted overlapping tenants %q and %q", a.name, b.name)
				}
			}
		}
	})
}

func TestScopeWithin(t *testing.T) {
	for _, c := range []struct {
		p, base string
		want    bool
	}{
		{"users/alice", "users/alice", true},
		{"users/alice/x", "users/alice", true},
		{"users/alicex", "users/alice", false},
		{"users/al", "users/alice", false},
		{"users", "users/alice", false},
		{"anything", "", true},
		{"", "users", false},
	} {
		if got := scopeWithin(c.p, c.base); got != c.want {
			t.Errorf("scopeWithin(%q, %q) = %v", c.p, c.base, got)
		}
	}
}

// newTenantServer is a Server (not serving) with the tenants of doc and
// the operator token op ("" for none), on bwrap isolation.
func newTenantServer(t *testing.T, op, doc string) *Server {
	t.Helper()
	requireBwrap(t)
	p := filepath.Join(t.TempDir(), "tenants.json")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{RootDir: t.TempDir(), TenantsFile: p, AuthToken: op, Isolation: "bwrap",
		DisableSSHWS: true, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestAuthenticate(t *testing.T) {
	s := newTenantServer(t, "operator-token", tenantsDoc(tenantJSON("alice", "alice-token", "users/alice", ""),
		tenantJSON("bob", "bob-token", "users/bob", "")))
	for _, c := range []struct {
		name   string
		header []string // Authorization values
		query  string
		who    string // tenant name, "operator", or "" for refused
	}{
		{"operator bearer", []string{"Bearer operator-token"}, "", "operator"},
		{"alice bearer", []string{"Bearer alice-token"}, "", "alice"},
		{"bob query", nil, "bob-token", "bob"},
		{"wrong token", []string{"Bearer nope"}, "", ""},
		{"no token", nil, "", ""},
		{"lower-case scheme", []string{"bearer alice-token"}, "", ""},
		{"two headers", []string{"Bearer alice-token", "Bearer alice-token"}, "", ""},
		{"token with trailing space", []string{"Bearer alice-token "}, "", ""},
		{"bad header, good query", []string{"Bearer nope"}, "alice-token", "alice"},
		{"header wins", []string{"Bearer bob-token"}, "alice-token", "bob"},
		{"empty bearer", []string{"Bearer "}, "", ""},
	} {
		target := "/mcp"
		if c.query != "" {
			target += "?token=" + c.query
		}
		r, _ := http.NewRequest("POST", target, nil)
		for _, h := range c.header {
			r.Header.Add("Authorization", h)
		}
		p, ok := s.authenticate(r)
		got := ""
		switch {
		case !ok:
		case p.tenant == nil:
			got = "operator"
		default:
			got = p.tenant.name
			if p.scope != p.tenant.scope {
				t.Errorf("%s: scope %q, want the tenant's", c.name, p.scope)
			}
		}
		if got != c.who {
			t.Errorf("%s: authenticated as %q, want %q", c.name, got, c.who)
		}
	}
}

// TestAuthenticateEmptyQuery: "?token=" is no token, even for a tenants
// file whose loader would have refused the empty token's hash.
func TestAuthenticateEmptyQuery(t *testing.T) {
	s := newTenantServer(t, "", tenantsDoc(tenantJSON("alice", "alice-token", "users/alice", "")))
	// Bypass the loader's rule to prove the request side refuses too.
	set := s.tenants.Load()
	set.list[0].hash = emptyTokenSum
	r, _ := http.NewRequest("GET", "/ssh?token=", nil)
	r.Header.Set("Authorization", "Bearer ")
	if _, ok := s.authenticate(r); ok {
		t.Error("an empty token got in")
	}
}

// TestAuthenticateTenantsOnly: with tenants and no operator token only
// tenants get in; an empty tenants list lets nobody in.
func TestAuthenticateTenantsOnly(t *testing.T) {
	s := newTenantServer(t, "", tenantsDoc(tenantJSON("alice", "alice-token", "users/alice", "")))
	r, _ := http.NewRequest("POST", "/mcp", nil)
	if _, ok := s.authenticate(r); ok {
		t.Error("a request without a token got in")
	}
	r.Header.Set("Authorization", "Bearer alice-token")
	if p, ok := s.authenticate(r); !ok || p.tenant == nil {
		t.Errorf("alice: %v %v", p, ok)
	}
	empty := newTenantServer(t, "", `{"tenants":[]}`)
	if _, ok := empty.authenticate(r); ok {
		t.Error("no tenants, no operator: a token got in")
	}
}

func TestNarrowScope(t *testing.T) {
	s := newTenantServer(t, "op", tenantsDoc(tenantJSON("alice", "alice-token", "users/alice", "")))
	alice := s.tenants.Load().list[0]
	tenant := principal{tenant: alice, scope: alice.scope}
	for _, c := range []struct {
		p         principal
		header    string
		scope     string
		status    int // 0 = accepted
		titleWant string
	}{
		{tenant, "", "users/alice", 0, ""},
		{tenant, "users/alice", "users/alice", 0, ""},
		{tenant, "/users/alice/", "users/alice", 0, ""},
		{tenant, "users/alice/project", "users/alice/project", 0, ""},
		{tenant, "users/bob", "", 403, "Forbidden"},
		{tenant, "users/alicex", "", 403, "Forbidden"},
		{tenant, "users", "", 403, "Forbidden"},
		{tenant, "/", "", 403, "Forbidden"},
		{tenant, "users/alice/../bob", "", 400, "Invalid scope path"},
		{principal{}, "users/bob", "users/bob", 0, ""},
		{principal{}, "", "", 0, ""},
	} {
		scope, refused := s.narrowScope(c.p, c.header)
		switch {
		case c.status == 0 && (refused != nil || scope != c.scope):
			t.Errorf("%q: %q %v, want %q", c.header, scope, refused, c.scope)
		case c.status != 0 && (refused == nil || refused.status() != c.status || refused.title != c.titleWant):
			t.Errorf("%q: %q %v, want %d %s", c.header, scope, refused, c.status, c.titleWant)
		}
	}
}

// TestTenantsConfigRefused: New refuses tenants with a static scope, with
// software isolation, with an invalid file, and a tenant holding the
// operator's token.
func TestTenantsConfigRefused(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(tenantsDoc(tenantJSON("alice", "alice-token", "users/alice", ""))), 0o600)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"tenants":[{"name":"x"}], "oops":1}`), 0o600)
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"static scope", Config{TenantsFile: good, ScopePath: "users", Isolation: "bwrap"}, "exclude each other"},
		{"software isolation", Config{TenantsFile: good, Isolation: "software"}, "tenants require bwrap isolation"},
		{"invalid file", Config{TenantsFile: bad, Isolation: "bwrap"}, "invalid tenants file"},
		{"operator's token", Config{TenantsFile: good, AuthToken: "alice-token", Isolation: "bwrap"}, "operator token's"},
	} {
		c.cfg.RootDir, c.cfg.DisableSSHWS, c.cfg.Logger = t.TempDir(), true, discardLogger()
		s, err := New(c.cfg)
		if err == nil {
			s.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestReloadTenants: a valid file replaces the tenants at once (a removed
// tenant's token is refused), an invalid one keeps them.
func TestReloadTenants(t *testing.T) {
	s := newTenantServer(t, "", tenantsDoc(tenantJSON("alice", "alice-token", "users/alice", ""),
		tenantJSON("bob", "bob-token", "users/bob", "")))
	req := func(tok string) *http.Request {
		r, _ := http.NewRequest("POST", "/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return r
	}
	os.WriteFile(s.cfg.TenantsFile, []byte(`{"tenants":[{"name":"x"}]}`), 0o600)
	if err := s.ReloadTenants(); err == nil {
		t.Fatal("an invalid file was loaded")
	}
	if _, ok := s.authenticate(req("bob-token")); !ok {
		t.Error("a failed reload dropped bob")
	}
	os.WriteFile(s.cfg.TenantsFile, []byte(tenantsDoc(tenantJSON("alice", "alice-token", "users/alice2", ""))), 0o600)
	if err := s.ReloadTenants(); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.authenticate(req("bob-token")); ok {
		t.Error("removed bob still gets in")
	}
	if p, ok := s.authenticate(req("alice-token")); !ok || p.scope != "users/alice2" {
		t.Errorf("alice after reload: %+v %v", p, ok)
	}
}

// TestChannelPrincipal: a new SSH channel works as the connection's
// tenant as the tenants file says now: refused once the tenant is removed
// or its token changed, in the new scope once it changed, refused when the
// upgrade's X-Scope-Path lies outside the new scope.
func TestChannelPrincipal(t *testing.T) {
	s := newTenantServer(t, "", tenantsDoc(tenantJSON("alice", "alice-token", "users/alice", "")))
	alice := s.tenants.Load().list[0]
	plain := &sshConnState{tenant: alice, scope: "users/alice"}
	narrowed := &sshConnState{tenant: alice, header: "users/alice/p", scope: "users/alice/p"}
	if p, ok := s.channelPrincipal(narrowed); !ok || p.scope != "users/alice/p" {
		t.Errorf("unchanged: %+v %v", p, ok)
	}
	os.WriteFile(s.cfg.TenantsFile, []byte(tenantsDoc(tenantJSON("alice", "alice-token", "users/a2", ""))), 0o600)
	s.ReloadTenants()
	if p, ok := s.channelPrincipal(plain); !ok || p.scope != "users/a2" {
		t.Errorf("moved scope: %+v %v", p, ok)
	}
	if _, ok := s.channelPrincipal(narrowed); ok {
		t.Error("a header outside the new scope was kept")
	}
	os.WriteFile(s.cfg.TenantsFile, []byte(tenantsDoc(tenantJSON("alice", "new-token", "users/alice", ""))), 0o600)
	s.ReloadTenants()
	if _, ok := s.channelPrincipal(plain); ok {
		t.Error("a changed token's connection opens channels")
	}
	os.WriteFile(s.cfg.TenantsFile, []byte(`{"tenants":[]}`), 0o600)
	s.ReloadTenants()
	if _, ok := s.channelPrincipal(plain); ok {
		t.Error("a removed tenant's connection opens channels")
	}
	if _, ok := s.channelPrincipal(&sshConnState{scope: "x"}); !ok {
		t.Error("the operator's connection was refused")
	}
}

// requireBwrap skips (fails under CI) without bwrap: tenants need it.
func requireBwrap(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("bwrap")
	testenv.Require(t, err == nil, "bwrap")
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
