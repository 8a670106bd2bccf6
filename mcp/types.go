// Package mcp is a hand-written Model Context Protocol implementation:
// the JSON-RPC 2.0 codec, a transport-free dispatcher (Server) offering the
// tools of a ToolSet, the stdio and Streamable HTTP transports, and a
// client. It depends on the standard library only; agentbe's workspace
// tools are built on it elsewhere (agentbe.NewMCPServer).
package mcp

import (
	"context"
	"encoding/json"
	"io"
)

// Implementation names a server or client in initialize.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// ToolAnnotations are the behaviour hints of a tool.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Tool describes a tool in tools/list. Schemas are kept as raw JSON so they
// are emitted exactly as written.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	// Execution is optional; the official filesystem server sends
	// {"taskSupport":"forbidden"}.
	Execution *ToolExecution `json:"execution,omitempty"`
	// LongRunning marks a tool whose calls may outlive a client's request
	// timeout (a command, a build). A Server with a TaskStore
	// (ServerOptions.Tasks) answers a call of it that runs longer than
	// TaskOptions.After with a task, when the request declares the tasks
	// extension (TasksExtension). It is not sent in tools/list.
	LongRunning bool `json:"-"`
}

// ToolExecution describes how a tool may be executed (MCP 2025-11-25).
type ToolExecution struct {
	TaskSupport string `json:"taskSupport,omitempty"`
}

// ResourceContents is the embedded resource of a "resource" content item.
type ResourceContents struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
}

// Content is one item of a tool result: "text", "image", "audio" or
// "resource".
type Content struct {
	Type     string            `json:"type"`
	Text     string            `json:"text,omitempty"`
	Data     string            `json:"data,omitempty"`
	MimeType string            `json:"mimeType,omitempty"`
	Resource *ResourceContents `json:"resource,omitempty"`
}

// CallToolResult is the result of tools/call. Tool failures are results with
// IsError set, never JSON-RPC errors.
type CallToolResult struct {
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitempty"`
}

// ToolCall is one tools/call as a ToolHandler receives it.
type ToolCall struct {
	// Index is the position of the called tool in the Server's ToolSet
	// (ToolSet.Tools order), Name its name.
	Index int
	Name  string
	// Arguments is the raw "arguments" object, nil when absent or null.
	Arguments json.RawMessage
	// Progress, when not nil, tells the client that the call is still
	// running, with an optional human-readable message: each call sends
	// one notifications/progress (its progress counting up) for a request
	// that carried _meta.progressToken, on a transport that can deliver it
	// before the response (stdio; Streamable HTTP, whose response then
	// becomes an SSE stream). Clients that reset their request timeout on
	// progress keep waiting while a long tool reports it now and then.
	// It must not be called after the handler has returned (such calls
	// are dropped).
	Progress func(message string)
	// Output, when not nil, receives the tool's output as it is produced
	// (a long-running tool served as a task: tasks/get shows the last of
	// it). Writes never fail.
	Output io.Writer
}

// ToolHandler serves the tools of a Server (NewServer): it runs the tool
// call names. A returned error becomes a result {isError: true} whose text
// is the error's message; a panic is recovered the same way (and logged).
// ctx is cancelled when the request ends, the client cancels it, or
// ServerOptions.CallTimeout elapses.
type ToolHandler func(ctx context.Context, call ToolCall) (*CallToolResult, error)

// TextResult is the usual success result: one text item, mirrored in
// structuredContent as {"content": text} the way the official filesystem
// server does.
func TextResult(text string) *CallToolResult {
	return &CallToolResult{
		Content:           []Content{{Type: "text", Text: text}},
		StructuredContent: map[string]string{"content": text},
	}
}

// ErrorResult is a tool failure result carrying msg.
func ErrorResult(msg string) *CallToolResult {
	return &CallToolResult{Content: []Content{{Type: "text", Text: msg}}, IsError: true}
}

// MarshalJSON writes the fields a content item of its type requires even
// when they are empty (an empty file is {"type":"text","text":""}), and
// omits the others. Strings are not HTML-escaped, like JSON.stringify.
func (c Content) MarshalJSON() ([]byte, error) {
	return appendContent(make([]byte, 0, len(c.Text)+len(c.Data)+48), &c), nil
}

// MarshalJSON encodes the result without reflection on the common path.
func (r CallToolResult) MarshalJSON() ([]byte, error) {
	return appendCallToolResult(nil, &r)
}
