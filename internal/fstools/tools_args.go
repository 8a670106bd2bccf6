package fstools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/agentbe/agent-backend/internal/jsonraw"
)

// args decodes a tool's "arguments" object the way the official server's
// zod schemas do: wrong or missing fields are collected as issues worded
// like zod's, unknown fields are ignored. The first failing call records the
// issue and returns the zero value, so a handler reads every field and then
// checks err().
type args struct {
	tool string
	// members of the arguments object, aliasing the raw arguments; a
	// repeated name counts once, with its last value (as JSON.parse does).
	members []argMember
	// index finds members by name once there are more than a handful, so
	// an object with many keys decodes in linear time.
	index  map[string]int
	issues []string
	inline [4]argMember // storage for the usual handful of members
}

// argIndexMin is the member count from which args keeps an index.
const argIndexMin = 16

type argMember struct {
	name  string
	value json.RawMessage
}

// decodeArgs parses raw (nil or "null" count as {}).
func decodeArgs(tool string, raw json.RawMessage) *args {
	a := &args{tool: tool}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return a
	}
	if trimmed[0] != '{' {
		a.issues = append(a.issues, "Invalid input: expected object, received "+jsonKind(trimmed))
		return a
	}
	if !jsonraw.Valid(trimmed) {
		a.issues = append(a.issues, "Invalid input: expected object, received "+jsonKind(trimmed))
		return a
	}
	a.members = a.inline[:0]
	jsonraw.ScanObject(trimmed, func(k, v []byte) {
		if i, ok := a.find(k); ok {
			a.members[i].value = v
			return
		}
		a.members = append(a.members, argMember{string(k), v})
		switch n := len(a.members); {
		case a.index != nil:
			a.index[a.members[n-1].name] = n - 1
		case n >= argIndexMin:
			a.index = make(map[string]int, 2*n)
			for i, m := range a.members {
				a.index[m.name] = i
			}
		}
	})
	return a
}

// find returns the position of member k.
func (a *args) find(k []byte) (int, bool) {
	if a.index != nil {
		i, ok := a.index[string(k)]
		return i, ok
	}
	for i := range a.members {
		if a.members[i].name == string(k) {
			return i, true
		}
	}
	return 0, false
}

// err returns the input validation error, worded like the MCP SDK's.
func (a *args) err() error {
	if len(a.issues) == 0 {
		return nil
	}
	return &toolError{msg: "MCP error -32602: Input validation error: Invalid arguments for tool " + a.tool + ": " + strings.Join(a.issues, "; ")}
}

func (a *args) fail(field, expected string, got json.RawMessage) {
	received := "undefined"
	if got != nil {
		received = jsonKind(got)
	}
	a.issues = append(a.issues, fmt.Sprintf("Invalid input: expected %s, received %s at %s", expected, received, field))
}

// jsonKind names a JSON value's type as zod reports it.
func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "undefined"
	}
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func (a *args) raw(field string) (json.RawMessage, bool) {
	if a.index != nil {
		if i, ok := a.index[field]; ok {
			return a.members[i].value, true
		}
		return nil, false
	}
	for i := range a.members {
		if a.members[i].name == field {
			return a.members[i].value, true
		}
	}
	return nil, false
}

// str reads a string field; a missing optional one is "".
func (a *args) str(field string, required bool) string {
	return string(a.bytes(field, required))
}

// bytes is str without the copy into a string: the decoded bytes, which
// may alias the arguments and must only be read. write_file passes its
// content on this way (two copies of every written byte less).
func (a *args) bytes(field string, required bool) []byte {
	v, ok := a.raw(field)
	if !ok {
		if required {
			a.fail(field, "string", nil)
		}
		return nil
	}
	b, ok := jsonraw.Unquote(v)
	if !ok {
		a.fail(field, "string", v)
		return nil
	}
	return b
}

// num reads an optional number field; absent gives (0, false).
func (a *args) num(field string) (float64, bool) {
	v, ok := a.raw(field)
	if !ok {
		return 0, false
	}
	var f float64
	if jsonKind(v) != "number" || json.Unmarshal(v, &f) != nil || math.IsInf(f, 0) {
		a.fail(field, "number", v)
		return 0, false
	}
	return f, true
}

// boolean reads an optional boolean field with a default.
func (a *args) boolean(field string, def bool) bool {
	v, ok := a.raw(field)
	if !ok {
		return def
	}
	var b bool
	if jsonKind(v) != "boolean" || json.Unmarshal(v, &b) != nil {
		a.fail(field, "boolean", v)
		return def
	}
	return b
}

// strs reads an array of strings; minItems applies when present.
func (a *args) strs(field string, required bool, minItems int) []string {
	v, ok := a.raw(field)
	if !ok {
		if required {
			a.fail(field, "array", nil)
		}
		return nil
	}
	var items []json.RawMessage
	if jsonKind(v) != "array" || json.Unmarshal(v, &items) != nil {
		a.fail(field, "array", v)
		return nil
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		s, ok := jsonraw.Unquote(it)
		if !ok {
			a.fail(fmt.Sprintf("%s[%d]", field, i), "string", it)
			continue
		}
		out = append(out, string(s))
	}
	if len(items) < minItems {
		a.issues = append(a.issues, fmt.Sprintf("Too small: expected array to have >=%d items at %s", minItems, field))
	}
	return out
}

// enum reads an optional string field restricted to allowed values.
func (a *args) enum(field, def string, allowed ...string) string {
	v, ok := a.raw(field)
	if !ok {
		return def
	}
	var s string
	if jsonKind(v) == "string" && json.Unmarshal(v, &s) == nil {
		for _, x := range allowed {
			if s == x {
				return s
			}
		}
	}
	a.issues = append(a.issues, fmt.Sprintf("Invalid option: expected one of %s at %s", quoteJoin(allowed), field))
	return def
}

func quoteJoin(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = `"` + v + `"`
	}
	return strings.Join(q, "|")
}

// edit is one edit_file replacement.
type edit struct{ oldText, newText string }

// edits reads edit_file's required "edits" array.
func (a *args) edits(field string) []edit {
	v, ok := a.raw(field)
	if !ok {
		a.fail(field, "array", nil)
		return nil
	}
	var items []json.RawMessage
	if jsonKind(v) != "array" || json.Unmarshal(v, &items) != nil {
		a.fail(field, "array", v)
		return nil
	}
	out := make([]edit, 0, len(items))
	for i, it := range items {
		if jsonKind(it) != "object" {
			a.fail(fmt.Sprintf("%s[%d]", field, i), "object", it)
			continue
		}
		sub := decodeArgs(a.tool, it)
		e := edit{oldText: sub.str("oldText", true), newText: sub.str("newText", true)}
		for _, is := range sub.issues {
			k := strings.LastIndex(is, " at ")
			a.issues = append(a.issues, fmt.Sprintf("%s at %s[%d].%s", is[:k], field, i, is[k+4:]))
		}
		out = append(out, e)
	}
	return out
}

// env reads exec's optional "env" object of strings.
func (a *args) env(field string) map[string]string {
	v, ok := a.raw(field)
	if !ok {
		return nil
	}
	var obj map[string]json.RawMessage
	if jsonKind(v) != "object" || json.Unmarshal(v, &obj) != nil {
		a.fail(field, "record", v)
		return nil
	}
	out := make(map[string]string, len(obj))
	for k, raw := range obj {
		var s string
		if jsonKind(raw) != "string" || json.Unmarshal(raw, &s) != nil {
			a.fail(field+"."+k, "string", raw)
			continue
		}
		out[k] = s
	}
	return out
}
