package mcp

import (
	"sync"
)

// ToolSet is the list of tools a Server offers, each defined by its name,
// description and input and output schemas (Tool), prepared once for many
// Servers: the lookup by name and the tools/list result are computed once
// and shared.
//
// A daemon that builds a Server per request, each bound to that request's
// workspace, makes its ToolSet at start-up and each Server with NewServer,
// which neither copies nor indexes the definitions again: a Server then
// costs one allocation plus whatever its ToolHandler binds.
//
// A ToolSet is immutable and safe for concurrent use.
type ToolSet struct {
	tools []Tool
	index map[string]int // nil while a linear scan is cheaper

	listOnce sync.Once
	listJSON []byte

	modernOnce sync.Once
	modernJSON []byte
}

// NewToolSet prepares tools. A later tool with the name of an earlier one
// replaces it in the earlier one's position.
func NewToolSet(tools ...Tool) *ToolSet {
	ts := &ToolSet{}
	for _, t := range tools {
		ts.put(t)
	}
	return ts
}

// Len returns the number of tools.
func (ts *ToolSet) Len() int { return len(ts.tools) }

// Tools returns a copy of the definitions in tools/list order.
func (ts *ToolSet) Tools() []Tool { return append([]Tool(nil), ts.tools...) }

// Index returns the position of the named tool, or -1.
func (ts *ToolSet) Index(name string) int { return ts.lookupBytes([]byte(name)) }

// linearLookupMax is the tool count up to which tools are found by a
// linear scan, which beats a map lookup for a handful of short names.
const linearLookupMax = 24

// put adds t or replaces the tool of the same name, returning its index.
// Only NewToolSet changes a ToolSet.
func (ts *ToolSet) put(t Tool) int {
	if i := ts.Index(t.Name); i >= 0 {
		ts.tools[i] = t
		return i
	}
	ts.tools = append(ts.tools, t)
	if ts.index != nil {
		ts.index[t.Name] = len(ts.tools) - 1
	} else if len(ts.tools) > linearLookupMax {
		ts.index = make(map[string]int, len(ts.tools)*2)
		for i := range ts.tools {
			ts.index[ts.tools[i].Name] = i
		}
	}
	return len(ts.tools) - 1
}

// lookupBytes is Index without converting name to a string.
func (ts *ToolSet) lookupBytes(name []byte) int {
	if ts.index != nil {
		if i, ok := ts.index[string(name)]; ok {
			return i
		}
		return -1
	}
	for i := range ts.tools {
		if ts.tools[i].Name == string(name) {
			return i
		}
	}
	return -1
}
