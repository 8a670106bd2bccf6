// Command mcpprobe connects to an MCP server with the official MCP Go SDK,
// lists its tools, optionally calls one, and prints what it saw as JSON,
// including the protocol version the SDK negotiated.
//
//	mcpprobe -url http://127.0.0.1:3000/mcp [-header 'Authorization: Bearer T']
//	mcpprobe -tool read_text_file -args '{"path":"a.txt"}' -- node server.js /dir
//
// With -want-version it exits 1 when the negotiated version differs (the SDK
// falls back to a 2025 initialize silently when server/discover fails).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/agentbe/agent-backend/interop/gosdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	h    http.Header
	next http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.next.RoundTrip(r)
}

func main() {
	url := flag.String("url", "", "Streamable HTTP endpoint (otherwise the command after -- is run over stdio)")
	var hdrs headers
	flag.Var(&hdrs, "header", "extra HTTP header 'Name: value' (repeatable)")
	version := flag.String("version", "", "protocol version to ask for first (default: the SDK's latest)")
	want := flag.String("want-version", "", "exit 1 unless this version was negotiated")
	tool := flag.String("tool", "", "tool to call after tools/list")
	args := flag.String("args", "{}", "JSON arguments of -tool")
	timeout := flag.Duration("timeout", 60*time.Second, "overall timeout")
	flag.Parse()

	var t mcp.Transport
	switch {
	case *url != "":
		h := http.Header{}
		for _, kv := range hdrs {
			k, v, ok := strings.Cut(kv, ":")
			if !ok {
				fatal(fmt.Errorf("-header %q: want 'Name: value'", kv))
			}
			h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
		t = &mcp.StreamableClientTransport{Endpoint: *url, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: headerTransport{h, http.DefaultTransport}}}
	case flag.NArg() > 0:
		t = &mcp.CommandTransport{Command: exec.Command(flag.Arg(0), flag.Args()[1:]...)}
	default:
		fatal(fmt.Errorf("give -url or a server command after --"))
	}
	var a map[string]any
	if err := json.Unmarshal([]byte(*args), &a); err != nil {
		fatal(fmt.Errorf("-args: %w", err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep, err := gosdk.Probe(ctx, t, gosdk.Options{ProtocolVersion: *version, Tool: *tool, Args: a})
	if rep != nil {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	}
	if err != nil {
		fatal(err)
	}
	if *want != "" && rep.ProtocolVersion != *want {
		fatal(fmt.Errorf("negotiated %s, want %s", rep.ProtocolVersion, *want))
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mcpprobe:", err)
	os.Exit(1)
}
