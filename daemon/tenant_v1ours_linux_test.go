package daemon

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTenantWatchAndGrep: the change feed and grep routes keep a tenant
// in its scope: another tenant's scope named by X-Scope-Path is 403, grep
// without one searches only the tenant's files, and a foreign X-Root-Dir
// does not tell a tenant where the root is.
func TestTenantWatchAndGrep(t *testing.T) {
	d := startTenantDaemon(t, Config{DisableSSHWS: true}, `{}`)
	root := d.RootDir()
	for _, dir := range []string{"users/alice", "users/bob"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "users/bob/secret.txt"), []byte("needle of bob\n"), 0o644)
	os.WriteFile(filepath.Join(root, "users/alice/mine.txt"), []byte("needle of alice\n"), 0o644)

	st, _, body := d.call(t, "POST", "/v1/fs/grep", aliceTok, "users/bob", strings.NewReader(`{"pattern":"needle"}`))
	if st != 403 || strings.Contains(body, "bob") && strings.Contains(body, "secret") {
		t.Errorf("grep in bob's scope: %d %s", st, body)
	}
	st, _, body = d.call(t, "POST", "/v1/fs/grep", aliceTok, "", strings.NewReader(`{"pattern":"needle","outputMode":"content"}`))
	if st != 200 || !strings.Contains(body, "needle of alice") || strings.Contains(body, "needle of bob") {
		t.Errorf("alice's grep: %d %s", st, body)
	}
	st, _, body = d.call(t, "GET", "/v1/fs/watch", aliceTok, "users/bob", nil)
	if st != 403 {
		t.Errorf("watch of bob's scope: %d %s", st, body)
	}
	req, _ := http.NewRequest("POST", d.url+"/v1/fs/grep", strings.NewReader(`{"pattern":"needle"}`))
	req.Header.Set("Authorization", "Bearer "+aliceTok)
	req.Header.Set("X-Root-Dir", "/elsewhere")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if st, body = resp.StatusCode, string(b); st != 403 || strings.Contains(body, root) {
		t.Errorf("X-Root-Dir mismatch told alice the root: %d %s", st, body)
	}
}
