package daemon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
)

// ErrInvalidTenants is wrapped by every error about a tenants file that
// cannot be used (unreadable, malformed, or breaking a rule).
var ErrInvalidTenants = errors.New("invalid tenants file")

// maxTenantsFile bounds the size of a tenants file.
const maxTenantsFile = 16 << 20

// Tenant is one entry of the tenants file (Config.TenantsFile): a name, the
// SHA-256 of its token, and the scope (a directory relative to RootDir)
// its token reaches. A Tenant is immutable; a reload makes new ones.
type Tenant struct {
	name    string
	hash    [32]byte
	scope   string
	limits  TenantLimits
	network string
}

// TenantLimits are a tenant's limits as the tenants file gives them; zero
// means no limit of the tenant's own for that item (the daemon's global
// limits still apply).
type TenantLimits struct {
	// MemoryBytes, Pids, CPU (cores) and TimeoutSeconds bound each of the
	// tenant's commands and the sum of them.
	MemoryBytes    int64   `json:"memoryBytes"`
	Pids           int     `json:"pids"`
	CPU            float64 `json:"cpu"`
	TimeoutSeconds float64 `json:"timeoutSeconds"`
	// Processes bounds the tenant's commands running at once.
	Processes int `json:"processes"`
	// SSHConns bounds the tenant's concurrent /ssh connections.
	SSHConns int `json:"sshConns"`
	// ACPInstances bounds the tenant's live ACP agent processes.
	ACPInstances int `json:"acpInstances"`
	// MCPInFlight bounds the tenant's concurrent /mcp and /v1 requests.
	MCPInFlight int `json:"mcpInFlight"`
	// UploadsInFlight bounds the tenant's concurrent /v1 uploads (PUT
	// /v1/fs/file and POST /v1/fs/upload-batch).
	UploadsInFlight int `json:"uploadsInFlight"`
}

// Name is the tenant's name.
func (t *Tenant) Name() string { return t.name }

// Scope is the tenant's scope, relative to the workspace root and
// normalized (NormalizeScopePath); never "".
func (t *Tenant) Scope() string { return t.scope }

// TenantLimits returns every limit the tenants file gives the tenant.
func (t *Tenant) TenantLimits() TenantLimits { return t.limits }

// Limits returns the tenant's resource limits for its commands (zero = no
// limit of its own): memory in bytes, number of processes (pids), CPU in
// cores and wall time.
func (t *Tenant) Limits() (memoryBytes int64, pids int, cpu float64, timeout time.Duration) {
	l := t.limits
	return l.MemoryBytes, l.Pids, l.CPU, time.Duration(l.TimeoutSeconds * float64(time.Second))
}

// Network is the tenant's network mode for its commands: "host", "none",
// or "" for the daemon's default.
func (t *Tenant) Network() string { return t.network }

// emptyTokenSum is the SHA-256 of "", which no tenant may have.
var emptyTokenSum = sha256.Sum256(nil)

// tenantSet is one loaded tenants file; never modified once built (a
// reload swaps in a new one).
type tenantSet struct {
	list []*Tenant
}

// tenantsFile is the JSON form of a tenants file.
type tenantsFile struct {
	Tenants []tenantEntry `json:"tenants"`
}

type tenantEntry struct {
	Name        string       `json:"name"`
	TokenSha256 string       `json:"tokenSha256"`
	Scope       string       `json:"scope"`
	Limits      TenantLimits `json:"limits"`
	Network     string       `json:"network"`
}

// LoadTenants reads and validates a tenants file (see ParseTenants).
func LoadTenants(path string) ([]*Tenant, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w: %v", ErrInvalidTenants, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTenantsFile+1))
	if err != nil {
		return nil, fmt.Errorf("daemon: %w: %s: %v", ErrInvalidTenants, path, err)
	}
	if len(data) > maxTenantsFile {
		return nil, fmt.Errorf("daemon: %w: %s: larger than %d bytes", ErrInvalidTenants, path, maxTenantsFile)
	}
	ts, err := ParseTenants(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return ts, nil
}

// ParseTenants parses and validates the JSON of a tenants file:
//
//	{"tenants": [{"name": "alice", "tokenSha256": "<64 hex>", "scope": "users/alice",
//	  "limits": {"memoryBytes": 268435456, "pids": 64, "sshConns": 4}, "network": "none"}]}
//
// Unknown fields are refused (a misspelt limit must not silently mean no
// limit). A name is 1 to 64 of [A-Za-z0-9._-] and unique; tokenSha256 is
// the hex SHA-256 of the tenant's token (64 hex digits, either case, not
// that of the empty token) and unique; scope passes NormalizeScopePath, is not the whole root, and is
// neither equal to nor inside nor around another tenant's; every limit is
// a finite number ≥ 0; network is "", "host" or "none". Errors wrap
// ErrInvalidTenants and never show a token hash.
func ParseTenants(data []byte) ([]*Tenant, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f tenantsFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("daemon: %w: %v", ErrInvalidTenants, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("daemon: %w: data after the JSON object", ErrInvalidTenants)
	}
	bad := func(i int, name, format string, args ...any) error {
		who := fmt.Sprintf("tenant %d", i+1)
		if validTenantName(name) {
			who += " (" + name + ")"
		}
		return fmt.Errorf("daemon: %w: %s: %s", ErrInvalidTenants, who, fmt.Sprintf(format, args...))
	}
	out := make([]*Tenant, 0, len(f.Tenants))
	names := map[string]bool{}
	hashes := map[[32]byte]bool{}
	for i, e := range f.Tenants {
		if !validTenantName(e.Name) {
			return nil, bad(i, "", "name %q: must be 1 to 64 characters of A-Z a-z 0-9 . _ -", e.Name)
		}
		if names[e.Name] {
			return nil, bad(i, e.Name, "name used twice")
		}
		names[e.Name] = true
		var h [32]byte
		if len(e.TokenSha256) != 64 {
			return nil, bad(i, e.Name, "tokenSha256 must be 64 hex digits (the SHA-256 of the token)")
		}
		if _, err := hex.Decode(h[:], []byte(e.TokenSha256)); err != nil {
			return nil, bad(i, e.Name, "tokenSha256 must be 64 hex digits (the SHA-256 of the token)")
		}
		if h == emptyTokenSum {
			return nil, bad(i, e.Name, "tokenSha256 is the hash of the empty token")
		}
		if hashes[h] {
			return nil, bad(i, e.Name, "tokenSha256 is another tenant's too")
		}
		hashes[h] = true
		scope, err := NormalizeScopePath(e.Scope)
		if err != nil {
			return nil, bad(i, e.Name, "scope %q: %v", e.Scope, err)
		}
		if scope == "" {
			return nil, bad(i, e.Name, "scope must name a directory below the workspace root, not the root")
		}
		for _, o := range out {
			if scopeWithin(scope, o.scope) || scopeWithin(o.scope, scope) {
				return nil, bad(i, e.Name, "scope %q overlaps tenant %s's scope %q (equal or nested)", scope, o.name, o.scope)
			}
		}
		if err := e.Limits.validate(); err != nil {
			return nil, bad(i, e.Name, "%v", err)
		}
		switch e.Network {
		case "", "host", "none":
		default:
			return nil, bad(i, e.Name, "network %q: must be \"host\", \"none\" or absent", e.Network)
		}
		out = append(out, &Tenant{name: e.Name, hash: h, scope: scope, limits: e.Limits, network: e.Network})
	}
	return out, nil
}

// validate reports the first limit that is negative or not finite.
func (l TenantLimits) validate() error {
	ints := []struct {
		name string
		v    int64
	}{
		{"memoryBytes", l.MemoryBytes}, {"pids", int64(l.Pids)}, {"processes", int64(l.Processes)},
		{"sshConns", int64(l.SSHConns)}, {"acpInstances", int64(l.ACPInstances)},
		{"mcpInFlight", int64(l.MCPInFlight)}, {"uploadsInFlight", int64(l.UploadsInFlight)},
	}
	for _, x := range ints {
		if x.v < 0 {
			return fmt.Errorf("limits.%s must not be negative", x.name)
		}
	}
	for _, x := range []struct {
		name string
		v    float64
	}{{"cpu", l.CPU}, {"timeoutSeconds", l.TimeoutSeconds}} {
		if x.v < 0 || math.IsNaN(x.v) || math.IsInf(x.v, 0) {
			return fmt.Errorf("limits.%s must be a number ≥ 0", x.name)
		}
	}
	// A timeout whose Duration overflows is no timeout at all.
	if l.TimeoutSeconds > float64(math.MaxInt64/int64(time.Second)) {
		return errors.New("limits.timeoutSeconds is too large")
	}
	return nil
}

// validTenantName reports whether n is 1 to 64 of [A-Za-z0-9._-].
func validTenantName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// scopeWithin reports whether the normalized scope p is base or lies
// inside it, comparing whole names ("users/al" is not inside
// "users/alice", nor "users/alicex" inside "users/alice"). Every scope
// lies within "" (the whole root).
func scopeWithin(p, base string) bool {
	if base == "" || p == base {
		return true
	}
	return strings.HasPrefix(p, base) && p[len(base)] == '/'
}
