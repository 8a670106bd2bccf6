package mcp

import (
	"bytes"
	"encoding/json"

	"github.com/agentbe/agent-backend/internal/jsonraw"
)

// listResult returns the tools/list result, computed once per ToolSet.
func (ts *ToolSet) listResult() []byte {
	ts.listOnce.Do(func() {
		encs := make([][]byte, len(ts.tools))
		n := len(`{"tools":[]}`)
		for i := range ts.tools {
			encs[i] = encodeTool(&ts.tools[i])
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
