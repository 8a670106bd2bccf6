package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// envelope holds the only two members of a JSON-RPC message the proxy
// looks at; everything else passes through untouched.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method json.RawMessage `json:"method"`
}

var errNotObject = errors.New("request body must be a JSON-RPC object")

// parseEnvelope checks that msg is one JSON object and extracts id and
// method. It does not judge the method: "_sandboxagent/*" is as opaque as
// any other.
func parseEnvelope(msg []byte) (envelope, error) {
	var e envelope
	t := bytes.TrimLeft(msg, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return e, errNotObject
	}
	if err := json.Unmarshal(msg, &e); err != nil {
		return e, err
	}
	if isNull(e.ID) {
		e.ID = nil
	}
	if isNull(e.Method) {
		e.Method = nil
	}
	return e, nil
}

func isNull(r json.RawMessage) bool { return len(r) == 0 || string(r) == "null" }

// isRequest: a method and an id; its response is awaited.
func (e envelope) isRequest() bool { return e.Method != nil && e.ID != nil }

// isResponse: an id and no method.
func (e envelope) isResponse() bool { return e.Method == nil && e.ID != nil }

// idKey canonicalises a JSON-RPC id so that 7, 7.0 and 7e0 (and "a" and
// "\u0061") match. It returns "" for an id that is neither a string nor a
// number.
func idKey(raw json.RawMessage) string {
	if k, ok := fastIDKey(raw); ok {
		return k
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return ""
	}
	switch x := v.(type) {
	case string:
		return "s:" + x
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return "n:" + strconv.FormatFloat(f, 'g', -1, 64)
		}
		return "n:" + x.String()
	}
	return ""
}

// oneLine returns msg as one line for newline-delimited framing: msg itself
// (byte for byte) when it has no CR or LF, otherwise its compact form
// (valid JSON can only hold raw CR/LF as whitespace between tokens).
func oneLine(msg []byte) ([]byte, error) {
	msg = bytes.TrimSpace(msg)
	if bytes.IndexByte(msg, '\n') < 0 && bytes.IndexByte(msg, '\r') < 0 {
		return msg, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, msg); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// fastIDKey handles the usual ids without a JSON decoder: small integers
// without sign, fraction or exponent, and strings without escapes.
func fastIDKey(raw []byte) (string, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		if bytes.IndexByte(raw[1:n-1], '\\') >= 0 || bytes.IndexByte(raw[1:n-1], '"') >= 0 {
			return "", false
		}
		return "s:" + string(raw[1:n-1]), true
	}
	if len(raw) == 0 || len(raw) > 15 || (raw[0] == '0' && len(raw) > 1) {
		return "", false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return "n:" + string(raw), true
}
