package daemon

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/testenv"
)

// getHealth GETs target and decodes the body.
func getHealth(t *testing.T, url string) (int, healthBody, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var b healthBody
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("%s: %v: %s", url, err, raw)
	}
	return resp.StatusCode, b, string(raw)
}

// TestHealthReportsIsolationAndBuild: /health says the isolation in force
// (auto resolved), that no resource limits are enforced, and the build's
// Go version, module version and revision (Config.Revision overriding
// what the toolchain recorded).
func TestHealthReportsIsolationAndBuild(t *testing.T) {
	for _, iso := range []agentbe.Isolation{agentbe.IsolationNone, agentbe.IsolationSoftware} {
		d := startDaemon(t, Config{Isolation: iso, Revision: "0123abcd"})
		code, b, raw := getHealth(t, d.url+"/health")
		if code != 200 || b.Isolation != string(iso) || b.ResourceLimits || b.Checks != nil {
			t.Errorf("%s: %d %s", iso, code, raw)
		}
		if b.Build.Go != runtime.Version() || b.Build.Version == "" || b.Build.Revision != "0123abcd" ||
			!strings.Contains(raw, `"resourceLimits":false`) {
			t.Errorf("%s: build %+v in %s", iso, b.Build, raw)
		}
	}
	d := startDaemon(t, Config{Isolation: agentbe.IsolationAuto})
	_, b, raw := getHealth(t, d.url+"/health")
	if b.Isolation != string(d.local.Isolation()) || b.Isolation == "auto" || b.Isolation == "" {
		t.Errorf("auto reported as %q: %s", b.Isolation, raw)
	}
}

// TestReadyBwrap: a bwrap daemon is ready and says so.
func TestReadyBwrap(t *testing.T) {
	_, err := exec.LookPath("bwrap")
	testenv.Require(t, err == nil, "bwrap")
	d := startDaemon(t, Config{Isolation: agentbe.IsolationBwrap})
	code, b, raw := getHealth(t, d.url+"/health?ready=1")
	if code != 200 || b.Status != "ok" || b.Isolation != "bwrap" || b.Checks == nil ||
		b.Checks.Workspace != "ok" || b.Checks.Isolation != "ok" {
		t.Errorf("%d %s", code, raw)
	}
}

// TestReadyWorkspace: the readiness answer turns 503 when the workspace
// root is gone or is not a directory, and back to 200 when it is fixed,
// while plain /health (liveness) stays 200; each change is logged once.
// No probe file is left in the workspace.
func TestReadyWorkspace(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ws")
	d := startDaemon(t, Config{RootDir: root, Isolation: agentbe.IsolationNone})
	d.ready.ttl = 0
	ready := func(wantCode int, wantWS string) {
		t.Helper()
		code, b, raw := getHealth(t, d.url+"/health?ready=1")
		if code != wantCode || b.Checks == nil || b.Checks.Workspace != wantWS || b.Checks.Isolation != "ok" {
			t.Errorf("ready: %d %s; want %d workspace %q", code, raw, wantCode, wantWS)
		}
		if wantCode != 200 && b.Status != "unavailable" {
			t.Errorf("status %q", b.Status)
		}
		if code, _, raw := getHealth(t, d.url+"/health"); code != 200 || strings.Contains(raw, "checks") {
			t.Errorf("liveness: %d %s", code, raw)
		}
	}
	ready(200, "ok")
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("probe left %v", ents)
	}
	aside := root + ".aside"
	if err := os.Rename(root, aside); err != nil {
		t.Fatal(err)
	}
	ready(503, "the workspace root does not exist")
	if err := os.WriteFile(root, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	ready(503, "the workspace root is not a directory")
	ready(503, "the workspace root is not a directory")
	os.Remove(root)
	if err := os.Rename(aside, root); err != nil {
		t.Fatal(err)
	}
	ready(200, "ok")
	log := d.log.String()
	if strings.Count(log, "daemon: not ready") != 1 || strings.Count(log, "daemon: ready again") != 1 {
		t.Errorf("log:\n%s", log)
	}
}

// TestReadyIsolationFails: when commands cannot run (here: the backend is
// destroyed, the real error path of Exec), readiness is 503 and says which
// isolation failed with the error code only.
func TestReadyIsolationFails(t *testing.T) {
	s, err := New(Config{RootDir: t.TempDir(), Isolation: agentbe.IsolationSoftware, SSHHostKeyPath: testKeyPath(t),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/health?ready=1", nil))
	var b healthBody
	json.Unmarshal(rec.Body.Bytes(), &b)
	if rec.Code != 503 || b.Checks == nil || b.Checks.Workspace != "ok" ||
		b.Checks.Isolation != "commands cannot run under isolation software (DESTROYED)" {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}

// TestReadyCached: within the TTL the last result is served without
// running the checks again (a flood of unauthenticated probes runs at most
// one round per TTL).
func TestReadyCached(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ws")
	d := startDaemon(t, Config{RootDir: root, Isolation: agentbe.IsolationNone})
	d.ready.ttl = time.Hour
	if code, _, raw := getHealth(t, d.url+"/health?ready=1"); code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	os.Remove(root)
	if code, _, raw := getHealth(t, d.url+"/health?ready=1"); code != 200 {
		t.Errorf("not served from the cache: %d %s", code, raw)
	}
	d.ready.mu.Lock()
	d.ready.ttl = 0
	d.ready.mu.Unlock()
	if code, _, raw := getHealth(t, d.url+"/health?ready=1"); code != 503 {
		t.Errorf("after the TTL: %d %s", code, raw)
	}
}

// TestReadyMethods: HEAD answers the status without a body; POST is 405.
func TestReadyMethods(t *testing.T) {
	d := startDaemon(t, Config{Isolation: agentbe.IsolationNone})
	resp, err := http.Head(d.url + "/health?ready=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("HEAD: %d %v", resp.StatusCode, resp.Header)
	}
	resp, err = http.Post(d.url+"/health?ready=1", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}
