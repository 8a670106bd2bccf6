package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/cgroup"
	"github.com/agentbe/agent-backend/internal/sandbox"
	"github.com/agentbe/agent-backend/internal/testenv"
)

// TestTenantExec: a tenant's limits bound its commands over the daemon's,
// its network mode applies to its scopes only, a reload changes both, and
// removing the tenant removes its group.
func TestTenantExec(t *testing.T) {
	_, err := sandbox.NewBwrap()
	testenv.Require(t, err == nil, "bwrap")
	m, err := cgroup.Host()
	testenv.Require(t, err == nil && m.Check(cgroup.Limits{MemoryBytes: 64 << 20, Pids: 32}) == nil, "writable cgroups")
	d := startDaemon(t, Config{Isolation: agentbe.IsolationBwrap, ExecLimits: agentbe.ResourceLimits{Timeout: time.Minute}})
	if !d.healthBody().ResourceLimits {
		t.Fatal("/health: limits not in force")
	}
	name := fmt.Sprintf("alice%d", os.Getpid())
	te, err := d.newTenantExec(name, agentbe.ResourceLimits{MemoryBytes: 128 << 20, Pids: 64, Timeout: time.Second}, agentbe.NetworkNone)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := d.local.Scope("users/alice", te.scopeOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Destroy(context.Background())
	ctx := context.Background()
	_, err = sc.Exec(ctx, "sleep 10", agentbe.ExecOptions{})
	if agentbe.CodeOf(err) != agentbe.CodeLimitExceeded || !strings.Contains(err.Error(), "time limit exceeded (1s per command, 1s for group \"tenant-"+name+"-") {
		t.Fatalf("tenant's timeout: %v", err)
	}
	_, port, _ := net.SplitHostPort(d.addr)
	probe := `if (exec 3<>/dev/tcp/127.0.0.1/` + port + `) 2>/dev/null; then echo reached; else echo unreachable; fi`
	for _, c := range []struct {
		b    agentbe.Backend
		want string
	}{{sc, "unreachable\n"}, {d.local, "reached\n"}} {
		out, err := c.b.Exec(ctx, "bash -c '"+probe+"'", agentbe.ExecOptions{})
		if err != nil || string(out) != c.want {
			t.Fatalf("probe of the daemon's port from %s: %q %v", c.b.RootDir(), out, err)
		}
	}
	if err := te.update(agentbe.ResourceLimits{MemoryBytes: 1 << 30}, agentbe.NetworkHost); err != nil {
		t.Fatal(err)
	}
	sc2, err := d.local.Scope("users/alice", te.scopeOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer sc2.Destroy(context.Background())
	if out, err := sc2.Exec(ctx, "sleep 1.5; bash -c '"+probe+"'", agentbe.ExecOptions{}); err != nil || string(out) != "reached\n" {
		t.Fatalf("after the reload: %q %v", out, err)
	}
	if err := te.update(agentbe.ResourceLimits{Pids: -1}, ""); agentbe.CodeOf(err) != agentbe.CodeInvalidConfiguration {
		t.Fatalf("bad reload: %v", err)
	}
	if te.scopeOptions().Network != agentbe.NetworkHost {
		t.Fatal("a refused reload changed the tenant")
	}
	var dirs []string
	for _, c := range []string{"memory", "pids"} {
		b, _ := os.ReadFile("/proc/self/cgroup")
		for _, line := range strings.Split(string(b), "\n") {
			if p := strings.SplitN(line, ":", 3); len(p) == 3 && p[1] == c {
				dirs = append(dirs, "/sys/fs/cgroup/"+c+p[2]+"/agentbe/tenant-"+name)
			}
		}
	}
	if err := te.close(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind", dir)
		}
	}
	if _, err := d.local.Scope("users/alice", te.scopeOptions()); agentbe.CodeOf(err) != agentbe.CodeInvalidConfiguration {
		t.Fatalf("scope of a removed tenant: %v", err)
	}
}

func TestTenantExecRefused(t *testing.T) {
	d := startDaemon(t, Config{Isolation: agentbe.IsolationSoftware})
	if d.healthBody().ResourceLimits {
		t.Fatal("/health: limits in force without any")
	}
	if _, err := d.newTenantExec("bob", agentbe.ResourceLimits{}, agentbe.NetworkNone); err == nil ||
		!strings.Contains(err.Error(), "network mode none needs the bwrap isolation mode") {
		t.Fatalf("network none under software isolation: %v", err)
	}
	// The name is free again: nothing was left of the refused tenant.
	te, err := d.newTenantExec("bob", agentbe.ResourceLimits{Timeout: time.Second}, "")
	if err != nil {
		t.Fatal(err)
	}
	te.close()
}

// TestTenantLimitsFromFile: the limits and network of the tenants file
// reach the tenant's commands (and no other tenant's), /health says limits
// are in force, and a reload that lifts them applies to the next command.
func TestTenantLimitsFromFile(t *testing.T) {
	m, err := cgroup.Host()
	testenv.Require(t, err == nil && m.Check(cgroup.Limits{MemoryBytes: 64 << 20, Pids: 32}) == nil, "writable cgroups")
	d := startTenantDaemon(t, Config{DisableSSHWS: true}, `{"pids":16,"timeoutSeconds":1}`)
	if !d.healthBody().ResourceLimits {
		t.Error("/health: tenant limits not reported in force")
	}
	exec := func(tok, cmd string) string {
		t.Helper()
		st, _, body := d.call(t, "POST", "/mcp", tok, "", strings.NewReader(toolCall("exec", `{"command":"`+cmd+`"}`)))
		if st != 200 {
			t.Fatalf("exec %q: %d %s", cmd, st, body)
		}
		return body
	}
	if body := exec(aliceTok, "sleep 3; echo done"); !strings.Contains(body, "LIMIT_EXCEEDED: time limit exceeded") {
		t.Errorf("alice's sleep past her time limit: %s", body)
	}
	if body := exec(aliceTok, "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40; do sleep 2 & done; wait"); !strings.Contains(body, "LIMIT_EXCEEDED: processes limit exceeded") {
		t.Errorf("alice's fork loop past her pids limit: %s", body)
	}
	if body := exec(bobTok, "sleep 1.5; echo done"); !strings.Contains(body, `"text":"done"`) {
		t.Errorf("bob has no limits of his own: %s", body)
	}
	doc := tenantsDoc(tenantJSON("alice", aliceTok, "users/alice", ""), tenantJSON("bob", bobTok, "users/bob", ""))
	if err := os.WriteFile(d.cfg.TenantsFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.ReloadTenants(); err != nil {
		t.Fatal(err)
	}
	if body := exec(aliceTok, "sleep 1.5; echo done"); !strings.Contains(body, `"text":"done"`) {
		t.Errorf("alice after her limits were lifted: %s", body)
	}
}
