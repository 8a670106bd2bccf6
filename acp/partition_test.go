package acp

import (
	"net/http"
	"strings"
	"testing"
)

// TestPartitions: two partitions may use the same server id; neither
// lists, reaches, deletes nor conflicts with the other's instance; a
// partition at its MaxInstances gets 429 with Retry-After while another
// starts more.
func TestPartitions(t *testing.T) {
	e := newTestEnv(t, envOpts{agents: []Agent{{ID: "cat", Command: "exec cat"}},
		cfg: Config{Partition: func(r *http.Request) Partition {
			return Partition{Key: r.Header.Get("X-Tenant"), MaxInstances: 1}
		}}})
	note := `{"jsonrpc":"2.0","method":"_probe"}`
	for _, p := range []string{"a", "b"} {
		if r := e.rpc("s1", "agent=cat", note, "X-Tenant", p); r.status != 202 {
			t.Fatalf("partition %s s1: %d %s", p, r.status, r.body)
		}
	}
	r := e.rpc("s2", "agent=cat", note, "X-Tenant", "a")
	if r.status != 429 || r.header.Get("Retry-After") == "" {
		t.Errorf("partition a beyond its cap: %d %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	if r := e.rpc("only-c", "agent=cat", note, "X-Tenant", "c"); r.status != 202 {
		t.Fatalf("partition c: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/acp", "", nil, "X-Tenant", "a"); strings.Contains(string(r.body), "only-c") ||
		strings.Count(string(r.body), `"serverId"`) != 1 {
		t.Errorf("a's listing: %s", r.body)
	}
	if r := e.rpc("only-c", "agent=cat", note, "X-Tenant", "a"); r.status == 409 || strings.Contains(string(r.body), "only-c' already") {
		t.Errorf("a learns of c's instance: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", "/v1/acp/only-c", "", nil, "X-Tenant", "a"); r.status != 204 || e.h.proxy.get("c", "only-c") == nil {
		t.Errorf("a deleted c's instance: %d", r.status)
	}
	if r := e.do("GET", "/v1/acp/only-c", "", nil, "X-Tenant", "a"); r.status != 404 {
		t.Errorf("a streams c's instance: %d %s", r.status, r.body)
	}
	if e.h.Proxy().Get("s1") != nil {
		t.Error("a partition's instance is in the default partition")
	}
}
