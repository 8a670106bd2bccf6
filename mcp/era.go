package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"

	"github.com/agentbe/agent-backend/internal/jsonraw"
)

// MCP has two eras. The legacy era (2025-11-25 and earlier) opens every
// connection with an initialize handshake. The modern era (2026-07-28)
// has no handshake and no session: each request names its protocol
// version and the client's capabilities in params._meta, and is served on
// its own. A Server serves both: a request claiming a modern version in
// _meta is modern, anything else is legacy, and the transports decide how
// far a decision reaches (a stdio connection is pinned by its first
// message; every Streamable HTTP POST is decided alone). docs/mcp.md
// describes what differs.

// ProtocolVersion2026 is the modern protocol revision.
const ProtocolVersion2026 = "2026-07-28"

// ModernProtocolVersions are the modern versions this package speaks,
// listed in server/discover.
var ModernProtocolVersions = []string{ProtocolVersion2026}

// LegacyProtocolVersions are the initialize-era versions this package
// speaks, newest first. A client asking initialize for one of them gets it
// echoed; any other version is answered with LatestLegacyProtocolVersion,
// as the official TypeScript SDK does.
var LegacyProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"}

// SupportedProtocolVersions are all the versions this package speaks,
// newest first: the modern ones, then the legacy ones.
var SupportedProtocolVersions = append(append([]string(nil), ModernProtocolVersions...), LegacyProtocolVersions...)

// LatestProtocolVersion is the version the Client tries first.
const LatestProtocolVersion = ProtocolVersion2026

// LatestLegacyProtocolVersion is the version negotiated in initialize for
// a version the server does not know, and the one the Client falls back to
// with a server that does not speak the modern era.
const LatestLegacyProtocolVersion = "2025-11-25"

func isModernVersion(v string) bool    { return contains(ModernProtocolVersions, v) }
func isLegacyVersion(v string) bool    { return contains(LegacyProtocolVersions, v) }
func isSupportedVersion(v string) bool { return isModernVersion(v) || isLegacyVersion(v) }

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// Error codes of the modern era.
const (
	// CodeHeaderMismatch: a Streamable HTTP header disagrees with the body
	// or is missing (HTTP 400).
	CodeHeaderMismatch = -32020
	// CodeMissingClientCapability: the request lacks a client capability
	// the server needs to serve it (HTTP 400).
	CodeMissingClientCapability = -32021
	// CodeUnsupportedProtocolVersion: the request names a protocol version
	// the server does not speak (HTTP 400).
	CodeUnsupportedProtocolVersion = -32022
)

// Keys of params._meta in the modern era.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaTraceparent        = "traceparent"
)

// era is how one request is served.
type era uint8

const (
	eraLegacy era = iota
	eraModern
)

// connEra is what a connection has decided about its era: stdio pins it
// with its first message; HTTP decides every request alone (eraPerRequest).
type connEra uint8

const (
	eraPerRequest connEra = iota // every request decides for itself
	eraUndecided                 // stdio before its first message
	eraPinnedLegacy
	eraPinnedModern
)

// RequestInfo is what a modern request says about its client in
// params._meta. A legacy request has only ProtocolVersion set, to "" (the
// version is the connection's, negotiated in initialize).
type RequestInfo struct {
	// ProtocolVersion is the request's modern protocol version.
	ProtocolVersion string
	// ClientCapabilities is the raw capabilities object of this request:
	// the server may rely on these and on no others.
	ClientCapabilities json.RawMessage
	// ClientInfo names the client when it said (optional).
	ClientInfo *Implementation
	// LogLevel is the level below which no log notification may be sent
	// for this request; "" means none may be sent.
	LogLevel string
	// Traceparent is the W3C trace context of the request, when valid.
	Traceparent string
}

// HasExtension reports whether the request's client capabilities declare
// the extension id (capabilities.extensions[id]).
func (ri *RequestInfo) HasExtension(id string) bool {
	if ri == nil || len(ri.ClientCapabilities) == 0 {
		return false
	}
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(ri.ClientCapabilities, &c) != nil {
		return false
	}
	_, ok := c.Extensions[id]
	return ok
}

type requestInfoKey struct{}

// RequestInfoFrom returns the RequestInfo of the request whose context ctx
// is (a tool handler's context), or nil for a legacy request.
func RequestInfoFrom(ctx context.Context) *RequestInfo {
	ri, _ := ctx.Value(requestInfoKey{}).(*RequestInfo)
	return ri
}

// Traceparent returns the W3C traceparent a request carried in
// params._meta (either era), or "".
func Traceparent(ctx context.Context) string {
	if ri := RequestInfoFrom(ctx); ri != nil {
		return ri.Traceparent
	}
	tp, _ := ctx.Value(traceKey{}).(string)
	return tp
}

type traceKey struct{}

// request is one request being served: the message, its era and what its
// _meta said. Every method of the dispatch receives one.
type request struct {
	*Message
	era   era
	info  *RequestInfo // modern only
	trace string       // traceparent, either era
	owner cancelOwner
	// hdr holds the HTTP request's headers (nil on stdio and in-process):
	// the modern era checks them against the body.
	hdr http.Header
	// status is the HTTP status of the response when it is not 200:
	// protocol errors of the modern era set it (reject).
	status int
}

// modern reports whether the request is served in the modern era.
func (rq *request) modern() bool { return rq.era == eraModern }

// metaFields are the members of a request's params._meta the server
// reads: the era's claim and envelope, the trace context, the progress
// token, the client's capabilities (for the tasks extension). metaOf finds
// them all in one pass over params and one over _meta, and keeps them on
// the Message, so the transports and every step of serving share it.
type metaFields struct {
	claim      []byte // io.modelcontextprotocol/protocolVersion, raw
	hasClaim   bool
	caps       []byte // io.modelcontextprotocol/clientCapabilities, raw
	clientInfo []byte
	logLevel   []byte
	trace      string          // a valid traceparent, or ""
	progress   json.RawMessage // a string or number progressToken, or nil

	tasks atomic.Int32 // requestDeclaresTasks: 0 not looked yet, 1 no, 2 yes
}

var noMeta = &metaFields{}

// metaOf returns the _meta members of m (of its last _meta, and of each
// member its last occurrence, as a JSON parser would).
func metaOf(m *Message) *metaFields {
	if f := m.meta.Load(); f != nil {
		return f
	}
	var meta []byte
	if paramsObject(m) {
		jsonraw.ScanObject(m.Params, func(k, v []byte) {
			if string(k) == "_meta" {
				meta = v
			}
		})
	}
	f := noMeta
	if len(meta) > 0 && meta[0] == '{' {
		f = &metaFields{}
		jsonraw.ScanObject(meta, func(k, v []byte) {
			switch string(k) {
			case MetaProtocolVersion:
				f.claim, f.hasClaim = v, true
			case MetaClientCapabilities:
				f.caps = v
			case MetaClientInfo:
				f.clientInfo = v
			case MetaLogLevel:
				f.logLevel = v
			case metaTraceparent:
				if s, ok := jsonraw.String(v); ok && validTraceparent(s) {
					f.trace = s
				}
			case "progressToken":
				if len(v) > 0 && (v[0] == '"' || v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
					f.progress = json.RawMessage(v)
				}
			}
		})
	}
	// Racing first calls compute equal values; either may be kept.
	m.meta.Store(f)
	return f
}

// metaClaim reports whether m's _meta claims a protocol version (the
// modern era), and the claimed value (raw JSON).
func metaClaim(m *Message) (raw []byte, ok bool) {
	f := metaOf(m)
	return f.claim, f.hasClaim
}

// traceOf returns a valid traceparent of m's _meta, or "".
func traceOf(m *Message) string { return metaOf(m).trace }

// validTraceparent checks the W3C form version-traceid-parentid-flags,
// lowercase hex, trace and parent ids not all zero, version not ff.
func validTraceparent(s string) bool {
	if len(s) != 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' || s[:2] == "ff" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i == 2 || i == 35 || i == 52 {
			continue
		}
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s[3:35] != "00000000000000000000000000000000" && s[36:52] != "0000000000000000"
}

var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// envelopeError is the data of a -32602 for a bad _meta: which key and
// what is wrong with it.
func envelopeError(key, problem string) json.RawMessage {
	b := append([]byte(`{"envelope":{"key":`), jsonraw.AppendString(nil, key)...)
	b = append(b, `,"problem":`...)
	b = jsonraw.AppendString(b, problem)
	return append(b, `}}`...)
}

// parseModern validates the _meta of a request claiming a modern version
// and fills rq.info; on a failure it returns the error response (and sets
// rq.status).
func (s *Server) parseModern(rq *request, claim []byte) []byte {
	v, ok := jsonraw.String(claim)
	if !ok {
		return s.reject(rq, http.StatusBadRequest, CodeInvalidParams,
			"Invalid _meta envelope for protocol revision "+ProtocolVersion2026+": "+MetaProtocolVersion+": must be a string",
			envelopeError(MetaProtocolVersion, "invalid"))
	}
	if !isModernVersion(v) {
		return s.unsupportedVersion(rq, v)
	}
	info := &RequestInfo{ProtocolVersion: v, Traceparent: rq.trace}
	f := metaOf(rq.Message)
	caps, cinfo, level := f.caps, f.clientInfo, f.logLevel
	prefix := "Invalid _meta envelope for protocol revision " + v + ": "
	if caps == nil {
		return s.reject(rq, http.StatusBadRequest, CodeInvalidParams, prefix+MetaClientCapabilities+": missing",
			envelopeError(MetaClientCapabilities, "missing"))
	}
	if caps[0] != '{' {
		return s.reject(rq, http.StatusBadRequest, CodeInvalidParams, prefix+MetaClientCapabilities+": must be an object",
			envelopeError(MetaClientCapabilities, "invalid"))
	}
	info.ClientCapabilities = bytes.Clone(caps)
	if cinfo != nil && !bytes.Equal(cinfo, jsonNull) {
		var impl Implementation
		if cinfo[0] != '{' || json.Unmarshal(cinfo, &impl) != nil {
			return s.reject(rq, http.StatusBadRequest, CodeInvalidParams, prefix+MetaClientInfo+": must be an Implementation object",
				envelopeError(MetaClientInfo, "invalid"))
		}
		info.ClientInfo = &impl
	}
	if level != nil {
		l, ok := jsonraw.String(level)
		if !ok || !contains(logLevels, l) {
			return s.reject(rq, http.StatusBadRequest, CodeInvalidParams, prefix+MetaLogLevel+": must be one of debug, info, notice, warning, error, critical, alert, emergency",
				envelopeError(MetaLogLevel, "invalid"))
		}
		info.LogLevel = l
	}
	rq.info = info
	return nil
}

// unsupportedVersion answers a request naming a version the server does
// not speak in the modern way: -32022 with the supported modern versions
// and the requested one.
func (s *Server) unsupportedVersion(rq *request, v string) []byte {
	data := []byte(`{"supported":[`)
	for i, mv := range ModernProtocolVersions {
		if i > 0 {
			data = append(data, ',')
		}
		data = jsonraw.AppendString(data, mv)
	}
	data = append(data, `],"requested":`...)
	data = jsonraw.AppendString(data, v)
	data = append(data, '}')
	return s.reject(rq, http.StatusBadRequest, CodeUnsupportedProtocolVersion, "Unsupported protocol version: "+v, data)
}

// reject answers rq with a protocol error, which Streamable HTTP sends
// with status.
func (s *Server) reject(rq *request, status, code int, msg string, data json.RawMessage) []byte {
	rq.status = status
	return appendError(nil, rq.ID, code, msg, data)
}
