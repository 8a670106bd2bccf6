package acp

import (
	"archive/tar"
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildTestServer builds acp/internal/testserver.
func buildTestServer(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "testserver")
	if out, err := exec.Command("go", "build", "-o", bin, "./internal/testserver").CombinedOutput(); err != nil {
		t.Fatalf("go build testserver: %v\n%s", err, out)
	}
	return bin
}

// startTestServer runs the test server on a fresh workspace (holding the
// test agent's source) and returns its base URL and workspace.
func startTestServer(t testing.TB, bin string, args ...string) (string, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(root+"/src", 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(agentSource(t))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(root+"/src/agent.mjs", src, 0o644)
	cmd := exec.Command(bin, append([]string{"-root", root}, args...)...)
	cmd.Env = append(os.Environ(), "ACP_SDK="+acpSDK(t))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening ") {
		t.Fatalf("test server did not start: %q %v", line, err)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "listening ")), root
}

// TestSandboxAgentSDK runs sandbox-agent's npm SDK (0.4.2) against the
// handler: fs, config, agents and an ACP session with createSession,
// prompt and dispose (interop/acp-sandbox-agent.test.mjs).
func TestSandboxAgentSDK(t *testing.T) {
	bin := buildTestServer(t)
	url, root := startTestServer(t, bin)
	tarFile := filepath.Join(t.TempDir(), "up.tar")
	f, err := os.Create(tarFile)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	tw.WriteHeader(&tar.Header{Name: "t/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "t/a.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
	tw.Write([]byte("A"))
	tw.Close()
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "acp-sandbox-agent.test.mjs")
	cmd.Dir = interopDir(t)
	cmd.Env = append(os.Environ(), "BASE_URL="+url, "TAR_FILE="+tarFile)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("sandbox-agent SDK against our handler: %v\n%s", err, out)
	}
	if _, err := os.Stat(root + "/.agents/agent.mjs"); err != nil {
		t.Fatal("the test agent was not installed lazily")
	}
}
