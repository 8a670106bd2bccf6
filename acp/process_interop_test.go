package acp

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestSandboxAgentSDKProcesses runs sandbox-agent's npm SDK (0.4.2)
// process and terminal calls against the handler
// (interop/processes-sandbox-agent.test.mjs).
// Under bwrap too: stop, kill and the terminal's ^C then take the
// sandbox's signal path (sandbox.Cmd.Signal).
func TestSandboxAgentSDKProcesses(t *testing.T) {
	bin := buildTestServer(t)
	for _, isolation := range []string{"none", "bwrap"} {
		t.Run(isolation, func(t *testing.T) {
			url, _ := startTestServer(t, bin, "-isolation", isolation)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			args := []string{"processes-sandbox-agent.test.mjs"}
			// The SDK's terminal uses the global WebSocket, behind a flag in Node 20.
			if exec.Command("node", "-e", "process.exit(typeof WebSocket === 'undefined' ? 1 : 0)").Run() != nil {
				args = append([]string{"--experimental-websocket"}, args...)
			}
			cmd := exec.CommandContext(ctx, "node", args...)
			cmd.Dir = interopDir(t)
			cmd.Env = append(os.Environ(), "BASE_URL="+url)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "ok") {
				t.Fatalf("sandbox-agent SDK against our handler: %v\n%s", err, out)
			}
		})
	}
}
