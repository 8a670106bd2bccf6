package gosdk

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Report is what one Probe saw.
type Report struct {
	// ProtocolVersion is the version the SDK negotiated: "2026-07-28" after a
	// successful server/discover, a 2025 version after the initialize fallback.
	ProtocolVersion string `json:"protocolVersion"`
	// Server is the server's self-reported name and version, if it sent one.
	Server *mcp.Implementation `json:"server,omitempty"`
	// Tools are the names tools/list returned, in the server's order.
	Tools []string `json:"tools"`
	// ListTTLMs and ListCacheScope are the cache hints of the tools/list
	// result (2026-07-28 servers send them; older ones do not).
	ListTTLMs      int    `json:"listTtlMs"`
	ListCacheScope string `json:"listCacheScope,omitempty"`
	// Call is the result of the tool call, when one was asked for.
	Call *mcp.CallToolResult `json:"call,omitempty"`
}

// CallText joins the text content of the tool call's result.
func (r *Report) CallText() string {
	if r.Call == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range r.Call.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// Options configure a Probe. The zero value lists tools only.
type Options struct {
	// ProtocolVersion is the version the client asks for first; empty means
	// the SDK's latest (2026-07-28).
	ProtocolVersion string
	// Tool, when set, is called with Args after tools/list.
	Tool string
	Args map[string]any
}

// Probe connects to the server behind t, lists its tools, calls opts.Tool if
// set, and closes the session.
func Probe(ctx context.Context, t mcp.Transport, opts Options) (rep *Report, err error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "agentbe-gosdk-probe", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: opts.ProtocolVersion})
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer func() { err = errors.Join(err, closeErr(cs.Close())) }()
	init := cs.InitializeResult()
	if init == nil {
		return nil, errors.New("connect returned a session without a negotiated version")
	}
	rep = &Report{ProtocolVersion: init.ProtocolVersion, Server: init.ServerInfo}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		return rep, fmt.Errorf("tools/list: %w", err)
	}
	rep.ListTTLMs, rep.ListCacheScope = list.TTLMs, list.CacheScope
	for _, tool := range list.Tools {
		rep.Tools = append(rep.Tools, tool.Name)
	}
	if opts.Tool == "" {
		return rep, nil
	}
	rep.Call, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: opts.Tool, Arguments: opts.Args})
	if err != nil {
		return rep, fmt.Errorf("tools/call %s: %w", opts.Tool, err)
	}
	return rep, nil
}

// closeErr keeps a failure to close, but not the report that the
// connection was already closed (the server may close first).
func closeErr(err error) error {
	if err == nil || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	return fmt.Errorf("close: %w", err)
}
