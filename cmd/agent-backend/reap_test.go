package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDaemonReapsSandboxInits: each bwrap sandbox leaves its init behind
// as a zombie for a moment, which counts against the tenant's pids limit
// until someone reaps it. The daemon reaps them itself (as it must where
// it is PID 1), so commands run back to back in a small pids limit are
// never refused for processes that no longer run, and none stays a
// zombie of the daemon.
func TestDaemonReapsSandboxInits(t *testing.T) {
	requireLimits(t)
	bin := cliBinary(t)
	dir := t.TempDir()
	tf := filepath.Join(dir, "tenants.json")
	os.WriteFile(tf, []byte(tenantsFileJSON(`{"pids":16}`, false)), 0o600)
	d := startTenantsDaemon(t, bin, filepath.Join(dir, "ws"), "--tenants", tf)
	alice := tenantClient{t, d.port, aliceToken}
	for i := range 60 {
		st, body := alice.tool("exec", `{"command":"true"}`)
		if st != 200 || strings.Contains(body, "LIMIT_EXCEEDED") || strings.Contains(body, `"isError":true`) {
			t.Fatalf("command %d of 60 in a 16-process limit: %d %s", i+1, st, body)
		}
	}
	var zombies []int
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if zombies = zombieChildrenOf(d.cmd.Process.Pid); len(zombies) == 0 {
			return
		}
	}
	t.Fatalf("zombie children of the daemon left: %v", zombies)
}

// zombieChildrenOf lists the children of pid that are zombies.
func zombieChildrenOf(pid int) []int {
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	var zs []int
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		for _, f := range bytes.Fields(b) {
			stat, _ := os.ReadFile("/proc/" + string(f) + "/stat")
			if i := bytes.LastIndexByte(stat, ')'); i >= 0 && bytes.HasPrefix(stat[i+1:], []byte(" Z")) {
				c, _ := strconv.Atoi(string(f))
				zs = append(zs, c)
			}
		}
	}
	return zs
}
