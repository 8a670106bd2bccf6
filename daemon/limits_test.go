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
	if agentbe.CodeOf(err) != agentbe.CodeLimitExceeded || !strings.Contains(err.Error(), "time limit exceeded (1s per command, 1s for group \"tenant-"+name+"\")") {
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
