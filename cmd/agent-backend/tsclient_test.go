package main

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestTypeScriptClientAgainstDaemon runs the unmodified TypeScript client
// (agent-backend@0.13.2, interop/ts-client.test.mjs under node --test)
// against our daemon binary in every isolation mode: its remote backend
// (files, binary content, exec with env/HOME/cwd; cd, $HOME and ".." under
// bwrap only, among them the check (cd "$HOME" && pwd -P)), a scoped
// backend and its MCP client. bwrap is part of CI (.ci/run installs it).
func TestTypeScriptClientAgainstDaemon(t *testing.T) {
	_, interop := nodeSetup(t)
	need(t, exists(filepath.Join(interop, "node_modules/agent-backend/package.json")),
		"agent-backend@0.13.2 (npm ci --prefix interop)")
	bin := cliBinary(t)
	for _, mode := range []string{"none", "software", "bwrap"} {
		t.Run(mode, func(t *testing.T) {
			d, _ := startDaemonBinary(t, bin, "--isolation", mode)
			env := []string{"AGENTBE_HOST=127.0.0.1", "AGENTBE_PORT=" + strconv.Itoa(d.port),
				"AGENTBE_TOKEN=s3cret-token-of-the-cli-tests-0123", "AGENTBE_ROOT=" + d.root, "AGENTBE_ISOLATION=" + mode}
			out, err := runNode(t, 2*time.Minute, interop, env, "--test", "ts-client.test.mjs")
			if err != nil {
				t.Fatalf("node --test: %v\n%s\ndaemon stderr:\n%s", err, out, d.stderr.String())
			}
		})
	}
}
