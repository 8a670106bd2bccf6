package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSDKLargeResults: the official SDK client over stdio closes the whole
// connection on a message over 10 MiB. A 200 MB exec, an exec of 20 MB of
// control bytes (six bytes each once escaped) and 64 MiB reads (text,
// several files, media) must each get a clear, bounded result, and the
// next call must still be answered.
func TestSDKLargeResults(t *testing.T) {
	_, interop := nodeSetup(t)
	bin := cliBinary(t)
	script := filepath.Join(repoRoot(t), "cmd/agent-backend/testdata/sdk_large_results.mjs")
	sdk := "MCP_SDK_DIR=" + filepath.Join(interop, "node_modules/@modelcontextprotocol/sdk")
	out, err := runNode(t, 4*time.Minute, interop, []string{sdk}, script, bin, t.TempDir(), "--isolation", "none")
	if err != nil || !strings.Contains(out, "LARGE-RESULTS-OK") {
		t.Fatalf("large results (%v):\n%s", err, out)
	}
}
