package fstools

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentbe/agent-backend/mcp"
)

// fsToolDef is one filesystem tool: its definition (built once, shared by
// every server) and the function that runs it against a workspace.
type fsToolDef struct {
	tool mcp.Tool
	run  func(t *fsTools, ctx context.Context, a *args) (*mcp.CallToolResult, error)
}

func ptr(b bool) *bool { return &b }

var (
	readOnly    = &mcp.ToolAnnotations{ReadOnlyHint: ptr(true), OpenWorldHint: ptr(false)}
	textOutput  = json.RawMessage(`{"type":"object","properties":{"content":{"type":"string"}},"required":["content"],"additionalProperties":false}`)
	mediaOutput = json.RawMessage(`{"type":"object","properties":{"content":{"type":"array","items":{"anyOf":[` +
		`{"type":"object","properties":{"type":{"type":"string","enum":["image","audio"]},"data":{"type":"string"},"mimeType":{"type":"string"}},"required":["type","data","mimeType"],"additionalProperties":false},` +
		`{"type":"object","properties":{"type":{"type":"string","const":"resource"},"resource":{"type":"object","properties":{"uri":{"type":"string"},"mimeType":{"type":"string"},"blob":{"type":"string"}},"required":["uri","blob"],"additionalProperties":false}},"required":["type","resource"],"additionalProperties":false}` +
		`]}}},"required":["content"],"additionalProperties":false}`)
)

func writeAnnotations(idempotent, destructive bool) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: ptr(false), IdempotentHint: ptr(idempotent), DestructiveHint: ptr(destructive), OpenWorldHint: ptr(false)}
}

// Input schemas: the structure (names, types, enums, defaults, required) is
// the official server's; the descriptions are ours.
const (
	schemaPathOnly = `{"type":"object","properties":{"path":{"type":"string","description":"File or directory path inside the workspace"}},"required":["path"]}`
	schemaRead     = `{"type":"object","properties":{` +
		`"path":{"type":"string","description":"File path inside the workspace"},` +
		`"tail":{"type":"number","description":"Return only the last N lines"},` +
		`"head":{"type":"number","description":"Return only the first N lines"}},"required":["path"]}`
)

var fsToolDefs = []fsToolDef{
	{mcp.Tool{Name: "read_file", Title: "Read File (Deprecated)",
		Description: "Returns a file's text. Kept for compatibility; read_text_file does the same.",
		InputSchema: json.RawMessage(schemaRead), OutputSchema: textOutput, Annotations: readOnly}, (*fsTools).readText},
	{mcp.Tool{Name: "read_text_file", Title: "Read Text File",
		Description: "Returns the content of one workspace file decoded as UTF-8 text, whatever its extension. " +
			"Pass head or tail to get only the first or last N lines (not both).",
		InputSchema: json.RawMessage(schemaRead), OutputSchema: textOutput, Annotations: readOnly}, (*fsTools).readText},
	{mcp.Tool{Name: "read_media_file", Title: "Read Media File",
		Description: "Returns a file base64-encoded with its MIME type: images and audio as image/audio content, " +
			"anything else as an embedded resource.",
		InputSchema: json.RawMessage(schemaPathOnly), OutputSchema: mediaOutput, Annotations: readOnly}, (*fsTools).readMedia},
	{mcp.Tool{Name: "read_multiple_files", Title: "Read Multiple Files",
		Description: "Returns the text of several files in one call, each preceded by its path. " +
			"A file that cannot be read yields an error entry; the others are still returned.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"paths":{"type":"array","minItems":1,"items":{"type":"string"},` +
			`"description":"Paths of the files to read"}},"required":["paths"]}`),
		OutputSchema: textOutput, Annotations: readOnly}, (*fsTools).readMultiple},
	{mcp.Tool{Name: "write_file", Title: "Write File",
		Description: "Creates a file, or replaces an existing one atomically, with the given UTF-8 content. " +
			"An existing file keeps its permissions.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"File path inside the workspace"},` +
			`"content":{"type":"string","description":"The complete new content"}},"required":["path","content"]}`),
		OutputSchema: textOutput, Annotations: writeAnnotations(true, true)}, (*fsTools).writeFile},
	{mcp.Tool{Name: "edit_file", Title: "Edit File",
		Description: "Applies a list of text replacements to a file in order and returns a unified diff of the change. " +
			"A replacement whose text is not found exactly is retried line by line ignoring indentation; " +
			"if one still does not match nothing is written. dryRun only shows the diff.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"File path inside the workspace"},` +
			`"edits":{"type":"array","items":{"type":"object","properties":{` +
			`"oldText":{"type":"string","description":"Text to replace (first occurrence)"},` +
			`"newText":{"type":"string","description":"Replacement text"}},"required":["oldText","newText"]}},` +
			`"dryRun":{"type":"boolean","default":false,"description":"Show the diff without writing"}},"required":["path","edits"]}`),
		OutputSchema: textOutput, Annotations: writeAnnotations(false, true)}, (*fsTools).editFile},
	{mcp.Tool{Name: "create_directory", Title: "Create Directory",
		Description: "Creates a directory and any missing parents; succeeds if it already exists.",
		InputSchema: json.RawMessage(schemaPathOnly), OutputSchema: textOutput, Annotations: writeAnnotations(true, false)}, (*fsTools).createDirectory},
	{mcp.Tool{Name: "list_directory", Title: "List Directory",
		Description: "Lists a directory's entries, one per line, marked [DIR] or [FILE].",
		InputSchema: json.RawMessage(schemaPathOnly), OutputSchema: textOutput, Annotations: readOnly}, (*fsTools).listDirectory},
	{mcp.Tool{Name: "list_directory_with_sizes", Title: "List Directory with Sizes",
		Description: "Lists a directory's entries marked [DIR] or [FILE] with file sizes, sorted by name or by size, " +
			"followed by totals.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Directory path inside the workspace"},` +
			`"sortBy":{"type":"string","enum":["name","size"],"default":"name","description":"Order of the entries"}},"required":["path"]}`),
		OutputSchema: textOutput, Annotations: readOnly}, (*fsTools).listDirectoryWithSizes},
	{mcp.Tool{Name: "directory_tree", Title: "Directory Tree",
		Description: "Returns the directory hierarchy below a path as indented JSON: entries with name, type " +
			"(file or directory) and, for directories, children. Symbolic links are listed as files and not followed.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Directory path inside the workspace"},` +
			`"excludePatterns":{"type":"array","items":{"type":"string"},"default":[],"description":"Glob patterns of entries to leave out"}},"required":["path"]}`),
		OutputSchema: textOutput, Annotations: readOnly}, (*fsTools).directoryTree},
	{mcp.Tool{Name: "move_file", Title: "Move File",
		Description: "Moves or renames a file or directory inside the workspace. Fails if the destination exists.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"source":{"type":"string","description":"Current path"},` +
			`"destination":{"type":"string","description":"New path"}},"required":["source","destination"]}`),
		OutputSchema: textOutput, Annotations: writeAnnotations(false, true)}, (*fsTools).moveFile},
	{mcp.Tool{Name: "search_files", Title: "Search Files",
		Description: "Finds files and directories below a path whose path relative to it matches a glob " +
			"('*.go' at the top level, '**/*.go' at any depth) and returns their full paths.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Directory to search"},` +
			`"pattern":{"type":"string","description":"Glob matched against relative paths"},` +
			`"excludePatterns":{"type":"array","items":{"type":"string"},"default":[],"description":"Globs of relative paths to skip"}},"required":["path","pattern"]}`),
		OutputSchema: textOutput, Annotations: readOnly}, (*fsTools).searchFiles},
	{mcp.Tool{Name: "get_file_info", Title: "Get File Info",
		Description: "Returns a file's or directory's size, times, type and permission bits.",
		InputSchema: json.RawMessage(schemaPathOnly), OutputSchema: textOutput, Annotations: readOnly}, (*fsTools).getFileInfo},
	{mcp.Tool{Name: "list_allowed_directories", Title: "List Allowed Directories",
		Description: "Returns the workspace root, the one directory these tools can access (with everything below it).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{}}`), OutputSchema: textOutput, Annotations: readOnly}, (*fsTools).listAllowed},
}

var (
	fsToolSet   = sync.OnceValue(func() *mcp.ToolSet { return mcp.NewToolSet(filesystemToolDefinitions()...) })
	fsExecTools = sync.OnceValue(func() *mcp.ToolSet { return mcp.NewToolSet(append(filesystemToolDefinitions(), execTool)...) })
)

// Tools returns the shared ToolSet of the 14 tools of the official MCP
// filesystem server (read_file included), followed by exec when withExec
// is set. Serve it with Handler.
func Tools(withExec bool) *mcp.ToolSet {
	if withExec {
		return fsExecTools()
	}
	return fsToolSet()
}

// Handler serves the tools of Tools against ws, exec through run (nil when
// the set has no exec), keeping every result within lim. Binding costs two
// small allocations, so mcp.NewServer(info, opts, Tools(run != nil),
// Handler(ws, run, lim)) is the way to build a Server per request.
//
// So that no single call can take unbounded time or memory, the tools read
// regular files only (a FIFO, a device or a socket is refused), never read
// more than the workspace's read limit (ReadLimiter; 64 MiB by default)
// into memory or build a listing larger than it, refuse glob patterns over
// 64 KiB (all patterns of a call together) and cap their brace expansion,
// descend at most 256 directory levels, visit at most 2^20 entries in one
// search, let the edits of one edit_file call scan at most 64 times the
// read limit, and check their context in every loop, so cancellation
// (notifications/cancelled, ServerOptions.CallTimeout) stops the work. Each
// bound fails the call with an error that names it. Results also stay
// within what one MCP message may carry (lim.MessageBytes): the text tools
// carry their text twice (content and structuredContent), so a read whose
// text, JSON-escaped, is over half the message limit fails with an error
// that says to read less with head or tail; read_media_file takes files up
// to three quarters of that (base64); edit_file still applies an edit
// whose diff would not fit, and says so instead of showing it.
func Handler(ws Workspace, run ExecFunc, lim Limits) mcp.ToolHandler {
	t := newFSTools(ws, lim)
	return func(ctx context.Context, c mcp.ToolCall) (*mcp.CallToolResult, error) {
		i, raw := c.Index, c.Arguments
		switch {
		case i >= 0 && i < len(fsToolDefs):
			d := &fsToolDefs[i]
			return d.run(t, ctx, decodeArgs(d.tool.Name, raw))
		case i == len(fsToolDefs) && run != nil:
			return serveExec(ctx, run, c, t.lim)
		}
		return nil, fmt.Errorf("fstools: no workspace tool at index %d", i)
	}
}

// errResult turns a tool failure into the result the official server gives.
func errResult(err error) (*mcp.CallToolResult, error) {
	return mcp.ErrorResult(err.Error()), nil
}

func textResult(s string) (*mcp.CallToolResult, error) { return mcp.TextResult(s), nil }

func (t *fsTools) listAllowed(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	if err := a.err(); err != nil {
		return errResult(err)
	}
	return textResult(fmt.Sprintf("Allowed directories:\n%s", t.root))
}

// forbiddenTasks is the execution mode the official server declares.
var forbiddenTasks = &mcp.ToolExecution{TaskSupport: "forbidden"}

func init() {
	for i := range fsToolDefs {
		fsToolDefs[i].tool.Execution = forbiddenTasks
	}
}

// filesystemToolDefinitions returns the definitions of the filesystem tools
// (what tools/list shows), without binding them to a workspace.
func filesystemToolDefinitions() []mcp.Tool {
	out := make([]mcp.Tool, len(fsToolDefs))
	for i, d := range fsToolDefs {
		out[i] = d.tool
	}
	return out
}
