package mcp

import (
	"bytes"
	"encoding/json"
)

// A small scanner for the top level of JSON-RPC messages. DecodeMessage
// validates the whole input with validJSON first (a fast, reflection-free
// pass) and then slices out the members it needs; strings are decoded by
// unquote, and only error objects go through encoding/json.
// Unlike encoding/json, member names match case-sensitively, as they do in
// the official (zod-based) SDK.

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string starting at data[i]=='"'
// (data is known to be valid JSON, so only quotes and backslashes matter):
// it jumps from quote to quote with bytes.IndexByte, and a quote ends the
// string unless an odd run of backslashes precedes it.
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			break
		}
		i += q
		n := 0
		for n < i && data[i-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return i + 1
		}
	}
	return len(data)
}

// skipValue returns the index after the JSON value starting at data[i]
// (data is known to be valid JSON).
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				i = skipString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(data) {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// scanObject calls fn with each member of the valid JSON object data: the
// decoded name (aliasing data when it has no escapes) and the raw value,
// whitespace trimmed. It returns false if data is not an object.
func scanObject(data []byte, fn func(key, val []byte)) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	for i < len(data) && data[i] == '"' {
		end := skipString(data, i)
		key, ok := unquote(data[i:end])
		if !ok {
			return false
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		vend := skipValue(data, i)
		fn(key, data[i:vend])
		i = skipSpace(data, vend)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return true
}

// jsonString is unquote returning a string.
func jsonString(raw []byte) (string, bool) {
	b, ok := unquote(raw)
	return string(b), ok
}

// internMethod returns the method names this package serves without
// allocating.
func internMethod(b []byte) string {
	switch string(b) {
	case "tools/call":
		return "tools/call"
	case "tools/list":
		return "tools/list"
	case "ping":
		return "ping"
	case "initialize":
		return "initialize"
	case "notifications/initialized":
		return "notifications/initialized"
	case "notifications/cancelled":
		return "notifications/cancelled"
	}
	return string(b)
}

var jsonNull = []byte("null")

// decodeFast is DecodeMessage's implementation for valid JSON input.
func decodeFast(data []byte) (*Message, error) {
	var (
		m                   Message
		jsonrpc, method     []byte
		errRaw              []byte
		hasJSONRPC, badType bool
	)
	ok := scanObject(data, func(key, val []byte) {
		switch string(key) {
		case "jsonrpc":
			jsonrpc, hasJSONRPC = val, true
		case "id":
			m.ID = bytes.Clone(val)
		case "method":
			method = val
		case "params":
			m.Params = bytes.Clone(val)
		case "result":
			m.Result = bytes.Clone(val)
		case "error":
			errRaw = val
		}
	})
	if !ok {
		return nil, errNotObject
	}
	if hasJSONRPC && bytes.Equal(jsonrpc, jsonNull) {
		hasJSONRPC = false
	}
	var version []byte
	if hasJSONRPC {
		v, ok := unquote(jsonrpc)
		if !ok {
			badType = true
		}
		version = v
	}
	hasMethod := false
	if method != nil && !bytes.Equal(method, jsonNull) {
		b, ok := unquote(method)
		if !ok {
			badType = true
		}
		m.Method, hasMethod = internMethod(b), true
	}
	if errRaw != nil && !bytes.Equal(errRaw, jsonNull) {
		var e RPCError
		if json.Unmarshal(errRaw, &e) != nil {
			badType = true
		} else {
			m.Error = &e
		}
	}
	if badType {
		return &Message{ID: m.ID}, errFieldType
	}
	if !hasJSONRPC || string(version) != "2.0" {
		return &m, errVersion
	}
	if hasMethod {
		if m.Method == "" {
			return &m, errEmptyMethod
		}
		if len(m.Params) > 0 && m.Params[0] != '{' && m.Params[0] != '[' && !bytes.Equal(m.Params, jsonNull) {
			return &m, errParamsType
		}
		if m.Result != nil || m.Error != nil {
			return &m, errRequestWithResult
		}
		m.validated = true
		return &m, nil
	}
	if m.ID == nil {
		return &m, errNoMethodNoID
	}
	if (m.Result == nil) == (m.Error == nil) {
		return &m, errResultXorError
	}
	return &m, nil
}
