package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/agentbe/agent-backend/internal/jsonraw"
)

// JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeRequestCancelled is what the MCP SDKs report for a request the
	// caller cancelled (it never travels over the wire from this server).
	CodeRequestCancelled = -32800
)

// Sentinel errors of the JSON-RPC codec; DecodeMessage's errors wrap one of
// them.
var (
	// ErrParse means the bytes are not JSON.
	ErrParse = errors.New("mcp: parse error")
	// ErrInvalidMessage means the JSON is not a JSON-RPC 2.0 message.
	ErrInvalidMessage = errors.New("mcp: invalid JSON-RPC message")
)

// RPCError is a JSON-RPC error object. It is also the error a Client
// returns when the server answers a request with an error.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error formats the error the way the MCP TypeScript SDK does.
func (e *RPCError) Error() string {
	return "MCP error " + strconv.Itoa(e.Code) + ": " + e.Message
}

// Message is one decoded JSON-RPC 2.0 message: a request (ID and Method
// set), a notification (Method set, ID nil) or a response (ID set, Result
// or Error set). ID keeps the raw JSON of the id, whatever its type, so it
// can be echoed verbatim.
type Message struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *RPCError

	validated bool // decoded by DecodeMessage: Params is known-valid JSON
	// meta caches what params._meta says (metaOf): a Message is read by
	// the transport and then served, each looking at it.
	meta atomic.Pointer[metaFields]
}

// IsRequest reports whether m expects a response.
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID != nil }

// IsNotification reports whether m is a notification.
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID == nil }

// IsResponse reports whether m is a response to a request.
func (m *Message) IsResponse() bool { return m.Method == "" }

var (
	errNotObject         = fmt.Errorf("%w: not an object", ErrInvalidMessage)
	errFieldType         = fmt.Errorf("%w: member of the wrong type", ErrInvalidMessage)
	errVersion           = fmt.Errorf("%w: jsonrpc must be \"2.0\"", ErrInvalidMessage)
	errEmptyMethod       = fmt.Errorf("%w: empty method", ErrInvalidMessage)
	errParamsType        = fmt.Errorf("%w: params must be an object", ErrInvalidMessage)
	errRequestWithResult = fmt.Errorf("%w: request with result or error", ErrInvalidMessage)
	errNoMethodNoID      = fmt.Errorf("%w: neither method nor id", ErrInvalidMessage)
	errResultXorError    = fmt.Errorf("%w: response needs exactly one of result and error", ErrInvalidMessage)
)

// DecodeMessage decodes one JSON-RPC 2.0 message (not a batch). The error
// wraps ErrParse when data is not JSON and ErrInvalidMessage when it is JSON
// but not a valid message; in the second case the returned Message still
// carries the id when one could be read, so the error response can echo it.
// Member names are matched case-sensitively; unknown members are ignored.
func DecodeMessage(data []byte) (*Message, error) {
	data = bytes.TrimSpace(data)
	if !jsonraw.Valid(data) {
		return nil, ErrParse
	}
	if len(data) == 0 || data[0] != '{' {
		return nil, errNotObject
	}
	return decodeFast(data)
}

// idOf extracts the raw "id" member of a JSON object, or nil.
func idOf(data []byte) json.RawMessage {
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &probe) != nil {
		return nil
	}
	return probe.ID
}

// isBatch reports whether data holds a JSON array (after leading space).
func isBatch(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '[':
			return true
		default:
			return false
		}
	}
	return false
}

var nullID = json.RawMessage("null")

// appendResponse appends {"jsonrpc":"2.0","id":ID,"result":RESULT}.
func appendResponse(b []byte, id, result json.RawMessage) []byte {
	if id == nil {
		id = nullID
	}
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// appendError appends a JSON-RPC error response.
func appendError(b []byte, id json.RawMessage, code int, msg string, data json.RawMessage) []byte {
	if id == nil {
		id = nullID
	}
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = jsonraw.AppendString(b, msg)
	if len(data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, data...)
	}
	return append(b, `}}`...)
}

// EncodeRequest encodes a request (id non-nil) or a notification (id nil).
// params may be nil, json.RawMessage or any value encoding/json accepts.
func EncodeRequest(id json.RawMessage, method string, params any) ([]byte, error) {
	b := append(make([]byte, 0, 128), `{"jsonrpc":"2.0"`...)
	if id != nil {
		b = append(b, `,"id":`...)
		b = append(b, id...)
	}
	b = append(b, `,"method":`...)
	b = jsonraw.AppendString(b, method)
	if params != nil {
		raw, err := marshalParams(params)
		if err != nil {
			return nil, err
		}
		if raw != nil {
			b = append(b, `,"params":`...)
			b = append(b, raw...)
		}
	}
	return append(b, '}'), nil
}

func marshalParams(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case json.RawMessage:
		if len(v) == 0 {
			return nil, nil
		}
		return v, nil
	case []byte:
		if len(v) == 0 {
			return nil, nil
		}
		return v, nil
	}
	return appendAny(nil, v)
}
