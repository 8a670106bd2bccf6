package mcp

import (
	"bytes"
	"encoding/json"

	"github.com/agentbe/agent-backend/internal/jsonraw"
)

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
	ok := jsonraw.ScanObject(data, func(key, val []byte) {
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
		v, ok := jsonraw.Unquote(jsonrpc)
		if !ok {
			badType = true
		}
		version = v
	}
	hasMethod := false
	if method != nil && !bytes.Equal(method, jsonNull) {
		b, ok := jsonraw.Unquote(method)
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
