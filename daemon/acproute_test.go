package daemon

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestACPRoutesMounted: /v1/* needs the token, takes the request's scope
// (or refuses a bad one), and GET / answers; /health stays open.
func TestACPRoutesMounted(t *testing.T) {
	s, err := New(Config{RootDir: t.TempDir(), AuthToken: "tok", DisableSSHWS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	do := func(method, path, tok, scope, body string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if scope != "" {
			req.Header.Set("X-Scope-Path", scope)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	for _, tok := range []string{"", "wrong", "TOK"} {
		if c, b := do("GET", "/v1/health", tok, "", ""); c != 401 {
			t.Errorf("token %q: %d %s", tok, c, b)
		}
	}
	if c, b := do("PUT", "/v1/fs/file?path=a.txt", "tok", "team", "x"); c != 200 || !strings.Contains(b, "/team/a.txt") {
		t.Fatal(c, b)
	}
	if c, b := do("GET", "/v1/fs/file?path=team/a.txt", "tok", "", ""); c != 200 || b != "x" {
		t.Fatal(c, b)
	}
	for _, bad := range []string{"../x", "a/../../x"} {
		if c, b := do("GET", "/v1/fs/file?path=a.txt", "tok", bad, ""); c != 400 {
			t.Errorf("scope %q: %d %s", bad, c, b)
		}
	}
	// A scope naming a file: the same refusal as on /mcp.
	if c, b := do("GET", "/v1/fs/stat?path=.", "tok", "team/a.txt", ""); c != 400 ||
		!strings.Contains(b, "Scope path must name a directory of the workspace, not a symbolic link or a file") {
		t.Errorf("scope naming a file: %d %s", c, b)
	}
	if c, b := do("GET", "/", "", "", ""); c != 200 {
		t.Fatal(c, b)
	}
	if c, b := do("GET", "/health", "", "", ""); c != 200 {
		t.Fatal(c, b)
	}
}

// TestACPRoutesRebinding: without a token, a request on the loopback
// listener under a foreign Host or Origin is refused; a loopback one works.
func TestACPRoutesRebinding(t *testing.T) {
	s, err := New(Config{RootDir: t.TempDir(), DisableSSHWS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"", "", 200},
		{"evil.example:80", "", 403},
		{"", "http://evil.example", 403},
		{"localhost", "http://localhost:3000", 200},
	} {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/health", nil)
		if tc.host != "" {
			req.Host = tc.host
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("host %q origin %q: %d, want %d", tc.host, tc.origin, resp.StatusCode, tc.want)
		}
	}
}
