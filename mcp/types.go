// Package mcp is a hand-written Model Context Protocol implementation:
// JSON-RPC 2.0 codec, a transport-free dispatcher, stdio and Streamable HTTP
// transports, a client, and the filesystem tools that operate on a
// Workspace. It imports nothing from the root agentbe package.
package mcp

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
)

// Workspace is what the filesystem tools operate on. Every agentbe backend
// (Local, Memory and scopes of either) satisfies it; paths follow the
// agentbe path conventions and errors wrap fs.ErrNotExist and friends.
type Workspace interface {
	// RootDir is the absolute workspace root, the only allowed directory.
	RootDir() string
	Open(ctx context.Context, p string) (io.ReadCloser, error)
	// Write replaces a file atomically, keeping the old file's mode bits and
	// following a symbolic link that stays inside the workspace.
	Write(ctx context.Context, p string, data []byte) error
	Create(ctx context.Context, p string) (io.WriteCloser, error)
	// ReadDir returns the sorted names of a directory's children.
	ReadDir(ctx context.Context, p string) ([]string, error)
	// Mkdir creates a directory and its missing parents.
	Mkdir(ctx context.Context, p string) error
	Stat(ctx context.Context, p string) (fs.FileInfo, error)
	Lstat(ctx context.Context, p string) (fs.FileInfo, error)
	Rename(ctx context.Context, oldPath, newPath string) error
	// RealPath resolves inside links and returns the absolute path under
	// RootDir; a link leading out is an error.
	RealPath(ctx context.Context, p string) (string, error)
}

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
