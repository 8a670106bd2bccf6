package daemon

import (
	"strings"
	"testing"
)

// TestTenantProcesses: a tenant's processes are its own (another tenant
// lists none of them), and its processes limit caps how many run at once
// across all of its scopes, while another tenant still starts its own.
func TestTenantProcesses(t *testing.T) {
	d := startTenantDaemon(t, Config{DisableSSHWS: true}, `{"processes":1}`)
	start := func(tok, scope string) (int, string) {
		st, _, body := d.call(t, "POST", "/v1/processes", tok, scope, strings.NewReader(`{"command":"sleep","args":["30"]}`))
		return st, body
	}
	if st, body := start(aliceTok, ""); st != 200 {
		t.Fatalf("alice's first process: %d %s", st, body)
	}
	if st, body := start(aliceTok, "users/alice/sub"); st != 409 || !strings.Contains(body, "max concurrent process limit reached (1)") {
		t.Errorf("alice's second process, in another of her scopes: %d %s", st, body)
	}
	// A run counts too while it runs: alice cannot go past her cap by
	// running instead of starting.
	run := func(tok string) (int, string) {
		st, _, body := d.call(t, "POST", "/v1/processes/run", tok, "", strings.NewReader(`{"command":"sleep","args":["1"]}`))
		return st, body
	}
	if st, body := run(aliceTok); st != 409 || !strings.Contains(body, "max concurrent process limit reached (1)") {
		t.Errorf("alice's run at her cap: %d %s", st, body)
	}
	if st, body := start(bobTok, ""); st != 200 {
		t.Errorf("bob's process: %d %s", st, body)
	}
	if st, body := run(bobTok); st != 200 || !strings.Contains(body, `"exitCode":0`) {
		t.Errorf("bob's run (he has no cap): %d %s", st, body)
	}
	st, _, body := d.call(t, "GET", "/v1/processes", bobTok, "", nil)
	if st != 200 || strings.Count(body, `"id"`) != 1 {
		t.Errorf("bob's list: %d %s", st, body)
	}
}
