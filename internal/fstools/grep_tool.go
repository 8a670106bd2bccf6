package fstools

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"sync"

	"github.com/agentbe/agent-backend/mcp"
)

// GrepRequest is one validated call of the grep tool. Before and After are
// the context lines after the tool's rule (an explicit contextBefore or
// contextAfter wins over contextAround for its side, 0 included).
type GrepRequest struct {
	Pattern, Path, Glob, Type string
	OutputMode                string // "files_with_matches", "count" or "content"
	CaseInsensitive           bool
	Multiline                 bool
	Before, After             int
	LineNumbers               bool
	HeadLimit                 int // 0: no limit
}

// GrepFunc runs one search of the grep tool and returns the tool's text:
// the answer, or the error's text with isError set.
type GrepFunc func(ctx context.Context, req GrepRequest) (text string, isError bool)

// grepTool is the TypeScript agent-backend's grep tool (0.13.2): its input
// schema exactly; the description says what ours does (no ripgrep is run).
var grepTool = mcp.Tool{
	Name: "grep",
	Description: "Search file contents (ripgrep-compatible: same regex syntax, file selection and output). " +
		"Returns matching file paths, per-file match counts, or match content. Respects .gitignore by default, " +
		"skips binary files and hidden files. Parameter shape mirrors Claude Code's Grep tool.",
	InputSchema: json.RawMessage("{\"type\":\"object\",\"properties\":{\"pattern\":{\"type\":\"string\",\"description\":\"Regex pattern to search for\"},\"path\":{\"description\":\"File or directory to search in. Defaults to the workspace root.\",\"type\":\"string\"},\"glob\":{\"description\":\"Glob to filter which files are searched (e.g. \\\"*.ts\\\", \\\"src/**/*.py\\\")\",\"type\":\"string\"},\"type\":{\"description\":\"Ripgrep file-type name (e.g. \\\"js\\\", \\\"py\\\", \\\"rust\\\"). See `rg --type-list`.\",\"type\":\"string\"},\"outputMode\":{\"description\":\"\\\"files_with_matches\\\" (default) returns matching paths; \\\"count\\\" returns per-file match counts; \\\"content\\\" returns matching lines.\",\"type\":\"string\",\"enum\":[\"content\",\"files_with_matches\",\"count\"]},\"caseInsensitive\":{\"description\":\"Case-insensitive matching (rg -i).\",\"type\":\"boolean\"},\"multiline\":{\"description\":\"Allow patterns to match across newlines (rg -U --multiline-dotall).\",\"type\":\"boolean\"},\"contextBefore\":{\"description\":\"Lines of context before each match (rg -B). Use 0 for none. Ignored outside content mode.\",\"type\":\"integer\",\"minimum\":0,\"maximum\":9007199254740991},\"contextAfter\":{\"description\":\"Lines of context after each match (rg -A). Use 0 for none. Ignored outside content mode.\",\"type\":\"integer\",\"minimum\":0,\"maximum\":9007199254740991},\"contextAround\":{\"description\":\"Lines of context on both sides of each match (rg -C). Use 0 for none. Ignored outside content mode. An explicit contextBefore/contextAfter overrides this for that side, exactly as rg does.\",\"type\":\"integer\",\"minimum\":0,\"maximum\":9007199254740991},\"lineNumbers\":{\"description\":\"Prefix content-mode output with line numbers (rg -n). Ignored for other output modes.\",\"type\":\"boolean\"},\"headLimit\":{\"description\":\"Cap result to the first N output lines (applied after search).\",\"type\":\"integer\",\"exclusiveMinimum\":0,\"maximum\":9007199254740991}},\"required\":[\"pattern\"],\"$schema\":\"http://json-schema.org/draft-07/schema#\"}"),
	Execution:   forbiddenTasks,
}

var fsExecGrepTools = sync.OnceValue(func() *mcp.ToolSet {
	return mcp.NewToolSet(append(filesystemToolDefinitions(), execTool, grepTool)...)
})

// WithGrep adds the grep tool to a server of Tools(true) and its Handler
// h: it returns the set (the 14 filesystem tools, exec, grep) and the
// handler that serves grep through g and every other tool through h. The
// tool validates its arguments as the reference's zod schema does, with
// the same messages, and keeps its text within lim like exec's.
func WithGrep(h mcp.ToolHandler, g GrepFunc, lim Limits) (*mcp.ToolSet, mcp.ToolHandler) {
	budget := lim.effective().single()
	index := len(fsToolDefs) + 1
	return fsExecGrepTools(), func(ctx context.Context, c mcp.ToolCall) (*mcp.CallToolResult, error) {
		if c.Index != index {
			return h(ctx, c)
		}
		req, err := decodeGrep(c.Arguments)
		if err != nil {
			return errResult(err)
		}
		text, isErr := g(ctx, req)
		text = fitOutput(text, int64(len(text)), budget)
		if isErr {
			return mcp.ErrorResult(text), nil
		}
		return mcp.TextResult(text), nil
	}
}

// decodeGrep validates the grep tool's arguments.
func decodeGrep(raw json.RawMessage) (GrepRequest, error) {
	a := decodeArgs("grep", raw)
	r := GrepRequest{
		Pattern: a.str("pattern", true), Path: a.str("path", false), Glob: a.str("glob", false),
		Type: a.str("type", false),
	}
	r.OutputMode = a.enum("outputMode", "files_with_matches", "content", "files_with_matches", "count")
	r.CaseInsensitive = a.boolean("caseInsensitive", false)
	r.Multiline = a.boolean("multiline", false)
	before, after, around := a.integer("contextBefore", 0), a.integer("contextAfter", 0), a.integer("contextAround", 0)
	r.LineNumbers = a.boolean("lineNumbers", false)
	if h := a.integer("headLimit", 1); h != nil {
		r.HeadLimit = *h
	}
	if err := a.err(); err != nil {
		return GrepRequest{}, err
	}
	if around != nil {
		r.Before, r.After = *around, *around
	}
	if before != nil {
		r.Before = *before
	}
	if after != nil {
		r.After = *after
	}
	return r, nil
}

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER, the bound zod
// puts on an int.
const maxSafeInteger = 1<<53 - 1

// integer reads an optional integer field of at least min (zod's
// z.number().int().min(0) or .positive()); absent gives nil.
func (a *args) integer(field string, min int) *int {
	v, ok := a.raw(field)
	if !ok {
		return nil
	}
	var f float64
	if jsonKind(v) != "number" || json.Unmarshal(v, &f) != nil || math.IsInf(f, 0) {
		a.fail(field, "number", v)
		return nil
	}
	if f != math.Trunc(f) {
		a.fail(field, "int", v)
		return nil
	}
	if f < float64(min) {
		op := ">=" + strconv.Itoa(min)
		if min == 1 {
			op = ">0"
		}
		a.issues = append(a.issues, "Too small: expected number to be "+op+" at "+field)
		return nil
	}
	if f > maxSafeInteger {
		a.issues = append(a.issues, "Too big: expected number to be <=9007199254740991 at "+field)
		return nil
	}
	n := int(min64(f, math.MaxInt32))
	return &n
}

func min64(f, m float64) float64 {
	if f > m {
		return m
	}
	return f
}
