package mcp

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/agentbe/agent-backend/internal/jsonraw"
)

// Servers made with NewServer and AddTool (rather than from a shared
// ToolSet) re-register the same tool definitions each time. Encoding a tool
// for tools/list costs far more than comparing it with the definition it
// was last encoded from, so encodings are cached process-wide by tool name
// and reused while the definition is unchanged. The cache is bounded; past
// the bound tools are simply encoded each time.
const maxCachedTools = 1024

var toolCache struct {
	sync.RWMutex
	m map[string]*cachedTool
}

type cachedTool struct {
	def Tool
	enc []byte
}

// listResult returns the tools/list result, computed once per ToolSet.
func (ts *ToolSet) listResult() []byte {
	ts.listOnce.Do(func() {
		encs := make([][]byte, len(ts.tools))
		n := len(`{"tools":[]}`)
		for i := range ts.tools {
			encs[i] = encodeToolCached(&ts.tools[i])
			n += len(encs[i]) + 1
		}
		b := make([]byte, 0, n)
		b = append(b, `{"tools":[`...)
		for i, e := range encs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, e...)
		}
		ts.listJSON = append(b, `]}`...)
	})
	return ts.listJSON
}

func encodeToolCached(t *Tool) []byte {
	toolCache.RLock()
	c := toolCache.m[t.Name]
	toolCache.RUnlock()
	if c != nil && toolEqual(&c.def, t) {
		return c.enc
	}
	enc := encodeTool(t)
	toolCache.Lock()
	if toolCache.m == nil {
		toolCache.m = make(map[string]*cachedTool)
	}
	if _, ok := toolCache.m[t.Name]; ok || len(toolCache.m) < maxCachedTools {
		toolCache.m[t.Name] = &cachedTool{def: cloneTool(t), enc: enc}
	}
	toolCache.Unlock()
	return enc
}

// encodeTool encodes one tool definition. An invalid schema is replaced by
// an empty object schema rather than producing invalid JSON.
func encodeTool(t *Tool) []byte {
	b := append(make([]byte, 0, 512+len(t.InputSchema)+len(t.OutputSchema)), `{"name":`...)
	b = jsonraw.AppendString(b, t.Name)
	if t.Title != "" {
		b = append(b, `,"title":`...)
		b = jsonraw.AppendString(b, t.Title)
	}
	if t.Description != "" {
		b = append(b, `,"description":`...)
		b = jsonraw.AppendString(b, t.Description)
	}
	b = append(b, `,"inputSchema":`...)
	b = appendSchema(b, t.InputSchema)
	if t.Annotations != nil {
		a, _ := json.Marshal(t.Annotations)
		b = append(b, `,"annotations":`...)
		b = append(b, a...)
	}
	if t.Execution != nil {
		e, _ := json.Marshal(t.Execution)
		b = append(b, `,"execution":`...)
		b = append(b, e...)
	}
	if len(t.OutputSchema) > 0 {
		b = append(b, `,"outputSchema":`...)
		b = appendSchema(b, t.OutputSchema)
	}
	return append(b, '}')
}

func appendSchema(b []byte, raw json.RawMessage) []byte {
	if len(raw) == 0 || !jsonraw.Valid(raw) {
		return append(b, `{"type":"object"}`...)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return append(b, `{"type":"object"}`...)
	}
	return append(b, buf.Bytes()...)
}

func cloneTool(t *Tool) Tool {
	c := *t
	c.InputSchema = bytes.Clone(t.InputSchema)
	c.OutputSchema = bytes.Clone(t.OutputSchema)
	if t.Annotations != nil {
		a := *t.Annotations
		c.Annotations = &a
	}
	if t.Execution != nil {
		e := *t.Execution
		c.Execution = &e
	}
	return c
}

func toolEqual(a, b *Tool) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		bytes.Equal(a.InputSchema, b.InputSchema) && bytes.Equal(a.OutputSchema, b.OutputSchema) &&
		annotationsEqual(a.Annotations, b.Annotations) && executionEqual(a.Execution, b.Execution)
}

func boolPtrEqual(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func annotationsEqual(a, b *ToolAnnotations) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Title == b.Title && boolPtrEqual(a.ReadOnlyHint, b.ReadOnlyHint) &&
		boolPtrEqual(a.DestructiveHint, b.DestructiveHint) && boolPtrEqual(a.IdempotentHint, b.IdempotentHint) &&
		boolPtrEqual(a.OpenWorldHint, b.OpenWorldHint)
}

func executionEqual(a, b *ToolExecution) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
