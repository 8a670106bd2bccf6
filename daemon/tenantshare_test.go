package daemon

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentbe/agent-backend/acp"
)

const (
	aliceTok = "alice-token-0123456789"
	bobTok   = "bob-token-0123456789"
)

// startTenantDaemon serves cfg with the tenants alice (users/alice, the
// limits aliceLimits, a JSON object) and bob (users/bob, no limits of his
// own) and the operator token "op", on bwrap isolation.
func startTenantDaemon(t *testing.T, cfg Config, aliceLimits string) *testDaemon {
	t.Helper()
	requireBwrap(t)
	p := filepath.Join(t.TempDir(), "tenants.json")
	doc := tenantsDoc(tenantJSON("alice", aliceTok, "users/alice", `,"limits":`+aliceLimits),
		tenantJSON("bob", bobTok, "users/bob", ""))
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.TenantsFile, cfg.AuthToken, cfg.Isolation = p, "op", "bwrap"
	return startDaemon(t, cfg)
}

// call sends an HTTP request with a bearer token and an optional
// X-Scope-Path.
func (d *testDaemon) call(t *testing.T, method, target, tok, scope string, body io.Reader) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, d.url+target, body)
	req.Header.Set("Authorization", "Bearer "+tok)
	if scope != "" {
		req.Header.Set("X-Scope-Path", scope)
	}
	if strings.HasPrefix(target, "/mcp") || strings.HasPrefix(target, "/v1/acp") {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestTenantScopeRoutes: a tenant's token works in its scope on /mcp and
// /v1; an X-Scope-Path outside it is 403 in each route's shape, one inside
// narrows it; the operator still reaches the whole root.
func TestTenantScopeRoutes(t *testing.T) {
	d := startTenantDaemon(t, Config{DisableSSHWS: true}, `{}`)
	root := d.RootDir()
	os.MkdirAll(filepath.Join(root, "users/bob"), 0o755)
	os.WriteFile(filepath.Join(root, "users/bob/secret.txt"), []byte("bob's canary"), 0o644)

	st, _, body := d.call(t, "POST", "/mcp", aliceTok, "", strings.NewReader(toolCall("write_file", `{"path":"a.txt","content":"hi"}`)))
	if st != 200 || strings.Contains(body, "isError\":true") {
		t.Fatalf("alice write: %d %s", st, body)
	}
	if b, err := os.ReadFile(filepath.Join(root, "users/alice/a.txt")); err != nil || string(b) != "hi" {
		t.Fatalf("alice's file is not in her scope: %q %v", b, err)
	}
	st, _, body = d.call(t, "POST", "/mcp", aliceTok, "users/bob", strings.NewReader(toolCall("read_text_file", `{"path":"secret.txt"}`)))
	var eb errorBody
	if st != 403 || json.Unmarshal([]byte(body), &eb) != nil || eb.Error != "Forbidden" ||
		eb.Message != "Scope path is outside the tenant's scope" {
		t.Errorf("/mcp forged X-Scope-Path: %d %s", st, body)
	}
	st, hdr, body := d.call(t, "GET", "/v1/fs/file?path=secret.txt", aliceTok, "users/bob", nil)
	if st != 403 || hdr.Get("Content-Type") != "application/problem+json" || !strings.Contains(body, `"status":403`) ||
		strings.Contains(body, "canary") {
		t.Errorf("/v1 forged X-Scope-Path: %d %s %s", st, hdr.Get("Content-Type"), body)
	}
	// Narrowing inside the tenant's scope works.
	st, _, body = d.call(t, "PUT", "/v1/fs/file?path=n.txt", aliceTok, "/users/alice/proj/", strings.NewReader("n"))
	if st != 200 {
		t.Errorf("narrowed PUT: %d %s", st, body)
	}
	if _, err := os.Stat(filepath.Join(root, "users/alice/proj/n.txt")); err != nil {
		t.Errorf("narrowed file: %v", err)
	}
	// The operator reaches bob's file; bob his own; alice nothing of bob's.
	if st, _, body := d.call(t, "GET", "/v1/fs/file?path=users/bob/secret.txt", "op", "", nil); st != 200 || body != "bob's canary" {
		t.Errorf("operator: %d %s", st, body)
	}
	if st, _, body := d.call(t, "GET", "/v1/fs/file?path=secret.txt", bobTok, "", nil); st != 200 || body != "bob's canary" {
		t.Errorf("bob: %d %s", st, body)
	}
	for _, p := range []string{"../bob/secret.txt", "/users/bob/secret.txt", "users/bob/secret.txt"} {
		if st, _, body := d.call(t, "GET", "/v1/fs/file?path="+p, aliceTok, "", nil); st == 200 || strings.Contains(body, "canary") {
			t.Errorf("alice read %s: %d %s", p, st, body)
		}
	}
	// Without a token, or with a wrong one: 401.
	if st, _, _ := d.call(t, "GET", "/v1/fs/entries?path=.", "nope", "", nil); st != 401 {
		t.Errorf("wrong token on /v1: %d", st)
	}
}

// TestTenantInFlightShare: a tenant at its mcpInFlight cap gets 429 with
// Retry-After on /mcp (JSON) and /v1 (problem+json), while another tenant
// and the operator are served; once its request ends it is served again.
func TestTenantInFlightShare(t *testing.T) {
	d := startTenantDaemon(t, Config{DisableSSHWS: true}, `{"mcpInFlight":1}`)
	dir := filepath.Join(d.RootDir(), "users/alice")
	os.MkdirAll(dir, 0o755)
	gate := filepath.Join(dir, "gate")
	os.WriteFile(gate, nil, 0o644)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.call(t, "POST", "/mcp", aliceTok, "", strings.NewReader(toolCall("exec",
			`{"command":"touch started; while [ -e gate ]; do sleep 0.05; done"}`)))
	}()
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(dir, "started")); return err == nil })

	st, hdr, body := d.call(t, "POST", "/mcp", aliceTok, "", strings.NewReader(initBody))
	var eb errorBody
	if st != 429 || hdr.Get("Retry-After") == "" || json.Unmarshal([]byte(body), &eb) != nil || !strings.Contains(eb.Message, "tenant alice") {
		t.Errorf("alice's second /mcp request: %d %q %s", st, hdr.Get("Retry-After"), body)
	}
	st, hdr, body = d.call(t, "GET", "/v1/fs/entries?path=.", aliceTok, "", nil)
	if st != 429 || hdr.Get("Retry-After") == "" || hdr.Get("Content-Type") != "application/problem+json" {
		t.Errorf("alice's /v1 request: %d %q %s", st, hdr.Get("Retry-After"), body)
	}
	for _, tok := range []string{bobTok, "op"} {
		if st, _, body := d.call(t, "POST", "/mcp", tok, "", strings.NewReader(initBody)); st != 200 {
			t.Errorf("%s while alice is at her cap: %d %s", tok, st, body)
		}
	}
	os.Remove(gate)
	wg.Wait()
	if st, _, body := d.call(t, "POST", "/mcp", aliceTok, "", strings.NewReader(initBody)); st != 200 {
		t.Errorf("alice after her request ended: %d %s", st, body)
	}
}

// TestTenantSSHShare: beyond its sshConns a tenant's /ssh upgrade is 429
// with Retry-After (before the upgrade); another tenant connects; an
// X-Scope-Path outside the tenant's scope on the upgrade is 403.
func TestTenantSSHShare(t *testing.T) {
	d := startTenantDaemon(t, Config{}, `{"sshConns":1}`)
	held := sshClient(t, d, "?token="+aliceTok, "")
	out, err := runSSH(t, held, "pwd", "")
	if err != nil || !strings.Contains(out, "/") {
		t.Fatalf("alice's session: %q %v", out, err)
	}
	st, hdr, body := rawResponse(t, d.addr, rebindRoute{name: "ssh", method: "GET", target: "/ssh?token=" + aliceTok, upgrade: true})
	if st != 429 || hdr.Get("Retry-After") == "" || !strings.Contains(body, "tenant alice") {
		t.Errorf("alice's second connection: %d %q %s", st, hdr.Get("Retry-After"), body)
	}
	bob := sshClient(t, d, "?token="+bobTok, "")
	if _, err := runSSH(t, bob, "true", ""); err != nil {
		t.Errorf("bob while alice is at her cap: %v", err)
	}
	st, _, body = rawResponse(t, d.addr, rebindRoute{name: "ssh", method: "GET", target: "/ssh?token=" + bobTok, upgrade: true},
		"X-Scope-Path", "users/alice")
	if st != 403 || !strings.Contains(body, "outside the tenant's scope") {
		t.Errorf("bob's upgrade into alice's scope: %d %s", st, body)
	}
	held.Close()
	sshClientWhenFree(t, d, "?token="+aliceTok)
}

// TestTenantSSHChannelsAfterRemoval: once a tenant is removed, its live
// connection opens no new channel, while another tenant's live connection
// goes on.
func TestTenantSSHChannelsAfterRemoval(t *testing.T) {
	d := startTenantDaemon(t, Config{}, `{}`)
	alice := sshClient(t, d, "?token="+aliceTok, "")
	bob := sshClient(t, d, "?token="+bobTok, "")
	if _, err := runSSH(t, alice, "true", ""); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(d.cfg.TenantsFile, []byte(tenantsDoc(tenantJSON("bob", bobTok, "users/bob", ""))), 0o600)
	if err := d.ReloadTenants(); err != nil {
		t.Fatal(err)
	}
	if s, err := alice.NewSession(); err == nil {
		s.Close()
		t.Error("a removed tenant's connection opened a channel")
	} else if !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("refusal: %v", err)
	}
	if out, err := runSSH(t, bob, "echo still", ""); err != nil || !strings.Contains(out, "still") {
		t.Errorf("bob's live connection after the reload: %q %v", out, err)
	}
}

// TestTenantUploadShare: a tenant at its uploadsInFlight cap gets 429 on
// a second upload while another tenant uploads; MaxUploads for all
// answers 503 "daemon full".
func TestTenantUploadShare(t *testing.T) {
	d := startTenantDaemon(t, Config{DisableSSHWS: true, MaxUploads: 2}, `{"uploadsInFlight":1}`)
	// hold starts an upload of tok's whose body stays open, and returns
	// once the daemon is writing it (its temporary file exists in dir).
	hold := func(tok, dir string) (done func()) {
		pr, pw := io.Pipe()
		ch := make(chan struct{})
		go func() {
			defer close(ch)
			req, _ := http.NewRequest("PUT", d.url+"/v1/fs/file?path=big.bin", pr)
			req.Header.Set("Authorization", "Bearer "+tok)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		// More than the client's write buffer, so that the request's
		// head reaches the daemon while the body is still open.
		go pw.Write(make([]byte, 256<<10))
		waitFor(t, func() bool {
			m, _ := filepath.Glob(filepath.Join(d.RootDir(), dir, ".big.bin.*.tmp"))
			return len(m) > 0
		})
		return func() { pw.Close(); <-ch }
	}
	releaseA := hold(aliceTok, "users/alice")
	st, hdr, body := d.call(t, "PUT", "/v1/fs/file?path=b.txt", aliceTok, "", strings.NewReader("b"))
	if st != 429 || hdr.Get("Retry-After") == "" || !strings.Contains(body, "uploads") {
		t.Errorf("alice's second upload: %d %s", st, body)
	}
	if st, _, body := d.call(t, "PUT", "/v1/fs/file?path=b.txt", bobTok, "", strings.NewReader("b")); st != 200 {
		t.Errorf("bob's upload: %d %s", st, body)
	}
	releaseB := hold(bobTok, "users/bob")
	st, _, body = d.call(t, "PUT", "/v1/fs/file?path=c.txt", "op", "", strings.NewReader("c"))
	if st != 503 || !strings.Contains(body, "daemon full") {
		t.Errorf("the third upload in flight: %d %s", st, body)
	}
	releaseA()
	releaseB()
	if st, _, body := d.call(t, "PUT", "/v1/fs/file?path=b.txt", aliceTok, "", strings.NewReader("b")); st != 200 {
		t.Errorf("alice after her upload ended: %d %s", st, body)
	}
}

// TestTenantACPPartitions: both tenants may use the server id "s1";
// neither lists, streams nor deletes the other's; a tenant at its
// acpInstances cap gets 429 with Retry-After while the other starts more;
// a tenant removed by a reload has its instances stopped.
func TestTenantACPPartitions(t *testing.T) {
	d := startTenantDaemon(t, Config{DisableSSHWS: true, ACPAgents: []acp.Agent{{ID: "cat", Command: "exec cat"}}},
		`{"acpInstances":1}`)
	start := func(tok, id string) (int, http.Header, string) {
		return d.call(t, "POST", "/v1/acp/"+id+"?agent=cat", tok, "", strings.NewReader(`{"jsonrpc":"2.0","method":"ping"}`))
	}
	for _, tok := range []string{aliceTok, bobTok} {
		if st, _, body := start(tok, "s1"); st != http.StatusAccepted {
			t.Fatalf("%s s1: %d %s", tok, st, body)
		}
	}
	if st, hdr, body := start(aliceTok, "s2"); st != 429 || hdr.Get("Retry-After") == "" {
		t.Errorf("alice beyond her cap: %d %q %s", st, hdr.Get("Retry-After"), body)
	}
	if st, _, body := start(bobTok, "bob-only"); st != http.StatusAccepted {
		t.Errorf("bob while alice is at her cap: %d %s", st, body)
	}
	list := func(tok string) []string {
		_, _, body := d.call(t, "GET", "/v1/acp", tok, "", nil)
		var l struct {
			Servers []struct {
				ServerID string `json:"serverId"`
			} `json:"servers"`
		}
		json.Unmarshal([]byte(body), &l)
		var ids []string
		for _, s := range l.Servers {
			ids = append(ids, s.ServerID)
		}
		return ids
	}
	if got := strings.Join(list(aliceTok), ","); got != "s1" {
		t.Errorf("alice lists %q", got)
	}
	if got := strings.Join(list(bobTok), ","); got != "s1,bob-only" {
		t.Errorf("bob lists %q", got)
	}
	// Alice cannot reach bob-only: not its stream, not a 409, not a delete.
	if st, _, body := d.call(t, "GET", "/v1/acp/bob-only", aliceTok, "", nil); st != 404 {
		t.Errorf("alice streams bob-only: %d %s", st, body)
	}
	if st, _, body := d.call(t, "POST", "/v1/acp/bob-only?agent=nope", aliceTok, "", strings.NewReader(`{"jsonrpc":"2.0","method":"x"}`)); st == 409 || strings.Contains(body, "another scope") {
		t.Errorf("alice learns of bob-only: %d %s", st, body)
	}
	if st, _, _ := d.call(t, "DELETE", "/v1/acp/s1", aliceTok, "", nil); st != 204 {
		t.Errorf("alice deletes her s1: %d", st)
	}
	if got := strings.Join(list(bobTok), ","); got != "s1,bob-only" {
		t.Errorf("bob lists %q after alice deleted her s1", got)
	}
	// Removing bob stops his instances, and only his.
	if st, _, body := start(aliceTok, "s3"); st != http.StatusAccepted {
		t.Fatalf("alice s3: %d %s", st, body)
	}
	os.WriteFile(d.cfg.TenantsFile, []byte(tenantsDoc(tenantJSON("alice", aliceTok, "users/alice", `,"limits":{"acpInstances":1}`))), 0o600)
	if err := d.ReloadTenants(); err != nil {
		t.Fatal(err)
	}
	px := d.acp.Proxy()
	waitFor(t, func() bool { return len(px.ListPartition("tenant:bob")) == 0 })
	if l := px.ListPartition("tenant:alice"); len(l) != 1 || l[0].ServerID != "s3" {
		t.Errorf("alice's instances after bob's removal: %+v", l)
	}
}
