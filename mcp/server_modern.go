package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/agentbe/agent-backend/internal/jsonraw"
)

// schemaDialect is the JSON Schema dialect of the modern era, stated on
// every tool schema as the official filesystem server does.
const schemaDialect = "https://json-schema.org/draft/2020-12/schema"

// discover answers server/discover (modern era only): the modern versions
// served, the capabilities, and the cache hints every list carries.
func (s *Server) discover(rq *request) []byte {
	if !rq.modern() {
		return s.methodNotFound(rq)
	}
	b := append(make([]byte, 0, 256), `{"jsonrpc":"2.0","id":`...)
	b = append(b, rq.ID...)
	b = append(b, `,"result":{"supportedVersions":[`...)
	for i, v := range ModernProtocolVersions {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonraw.AppendString(b, v)
	}
	// tools without listChanged: the list of a server is fixed, so a
	// client has no reason to keep a subscriptions/listen stream open.
	b = append(b, `],"capabilities":{"tools":{}`...)
	if s.opts.Tasks != nil {
		// Long exec calls may become tasks (tasks_server.go) for clients
		// that declare the extension too.
		b = append(b, `,"extensions":{"`+TasksExtension+`":{}}`...)
	}
	b = append(b, '}')
	if s.opts.Instructions != "" {
		b = append(b, `,"instructions":`...)
		b = jsonraw.AppendString(b, s.opts.Instructions)
	}
	b = append(b, `,"resultType":"complete","ttlMs":0,"cacheScope":"private"`...)
	b = s.appendMetaServerInfo(b)
	return append(b, "}}"...)
}

// appendModernTrailer appends the members every modern result carries
// besides its own: resultType and the server's identity in _meta.
func (s *Server) appendModernTrailer(b []byte) []byte {
	b = append(b, `,"resultType":"complete"`...)
	return s.appendMetaServerInfo(b)
}

func (s *Server) appendMetaServerInfo(b []byte) []byte {
	b = append(b, `,"_meta":{`...)
	return append(s.appendServerInfo(b), '}')
}

// appendServerInfo appends the serverInfo member of a result's _meta.
func (s *Server) appendServerInfo(b []byte) []byte {
	b = append(b, `"`+MetaServerInfo+`":{"name":`...)
	b = jsonraw.AppendString(b, s.info.Name)
	if s.info.Title != "" {
		b = append(b, `,"title":`...)
		b = jsonraw.AppendString(b, s.info.Title)
	}
	b = append(b, `,"version":`...)
	b = jsonraw.AppendString(b, s.info.Version)
	return append(b, '}')
}

// modernListResult returns the tools/list result of the modern era without
// its closing brace (the Server appends its trailer): the tools in the
// same fixed order, each schema stating the 2020-12 dialect, no execution
// member (task support is negotiated per request there), and the cache
// hints: ttlMs 0 and cacheScope "private" (a list may depend on the
// caller's authorization, as the daemon's does on the token and scope).
func (ts *ToolSet) modernListResult() []byte {
	ts.modernOnce.Do(func() {
		b := append(make([]byte, 0, len(ts.listResult())+len(ts.tools)*128), `{"tools":[`...)
		for i := range ts.tools {
			if i > 0 {
				b = append(b, ',')
			}
			t := ts.tools[i]
			t.Execution = nil
			t.InputSchema = withDialect(t.InputSchema)
			if len(t.OutputSchema) > 0 {
				t.OutputSchema = withDialect(t.OutputSchema)
			}
			b = append(b, encodeTool(&t)...)
		}
		ts.modernJSON = append(b, `],"ttlMs":0,"cacheScope":"private"`...)
	})
	return ts.modernJSON
}

// draft07 is the dialect of schemas written for the 2025 era (the
// TypeScript reference's grep tool states it).
const draft07 = `"http://json-schema.org/draft-07/schema#"`

// draft07Changed are the draft-07 keywords whose meaning 2020-12 changed;
// a draft-07 schema without them means the same in 2020-12.
var draft07Changed = []string{`"items":[`, `"additionalItems"`, `"dependencies"`}

// withDialect returns an object schema with "$schema" first, set to the
// 2020-12 dialect when it names none. A schema naming its own is kept,
// except that draft-07 is restated as 2020-12 when none of the keywords
// whose meaning changed appear (the 2026 era states 2020-12 everywhere).
func withDialect(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || !jsonraw.Valid(raw) {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	if raw[0] != '{' {
		return raw
	}
	var dialect []byte
	has := false
	jsonraw.ScanObject(raw, func(k, v []byte) {
		if string(k) == "$schema" {
			has, dialect = true, v
		}
	})
	if has && string(bytes.TrimSpace(dialect)) == draft07 && !containsAny(raw, draft07Changed) {
		if stripped, ok := dropMember(raw, []byte(`"$schema":`+draft07)); ok {
			raw, has = stripped, false
		}
	}
	if has {
		return raw
	}
	b := append(make([]byte, 0, len(raw)+64), `{"$schema":"`+schemaDialect+`"`...)
	rest := bytes.TrimSpace(raw[1:])
	if len(rest) > 0 && rest[0] != '}' {
		b = append(b, ',')
	}
	return append(b, rest...)
}

// dropMember returns the object raw without its member m (written
// exactly so, as the schemas we serve write it) and the comma that joined
// it to a neighbour; false when m is not a whole member of raw.
func dropMember(raw, m []byte) ([]byte, bool) {
	i := bytes.Index(raw, m)
	if i < 0 {
		return raw, false
	}
	j := i + len(m)
	switch {
	case raw[i-1] == ',' && (raw[j] == ',' || raw[j] == '}'):
		i-- // drop the comma before it
	case raw[i-1] == '{' && raw[j] == ',':
		j++ // drop the comma after it
	case raw[i-1] == '{' && raw[j] == '}':
	default:
		return raw, false
	}
	out := append(append(make([]byte, 0, len(raw)), raw[:i]...), raw[j:]...)
	if !jsonraw.Valid(out) {
		return raw, false
	}
	return out, true
}

// containsAny reports whether b contains one of subs.
func containsAny(b []byte, subs []string) bool {
	for _, sub := range subs {
		if bytes.Contains(b, []byte(sub)) {
			return true
		}
	}
	return false
}

// nameParam names, per method, the params member its Mcp-Name header
// repeats on Streamable HTTP.
var nameParam = map[string]string{
	"tools/call":     "name",
	"prompts/get":    "name",
	"resources/read": "uri",
	"tasks/get":      "taskId",
	"tasks/update":   "taskId",
	"tasks/cancel":   "taskId",
}

// checkHeaders checks the standard headers of a modern Streamable HTTP
// request against its body: MCP-Protocol-Version must equal the _meta
// version, Mcp-Method the method and, for the methods naming a target,
// Mcp-Name that target. A header missing, malformed or disagreeing is
// -32020 with HTTP 400.
func (s *Server) checkHeaders(rq *request) []byte {
	check := func(name, body string) []byte {
		vals := rq.hdr.Values(name)
		if len(vals) == 0 {
			return s.reject(rq, http.StatusBadRequest, CodeHeaderMismatch, "Bad Request: missing required header "+name, nil)
		}
		if len(vals) > 1 {
			return s.reject(rq, http.StatusBadRequest, CodeHeaderMismatch, "Bad Request: header "+name+" given more than once", nil)
		}
		v, ok := decodeHeaderValue(vals[0])
		if !ok {
			return s.reject(rq, http.StatusBadRequest, CodeHeaderMismatch, "Bad Request: invalid value of header "+name, nil)
		}
		if v != body {
			return s.headerMismatch(rq, name, v, body)
		}
		return nil
	}
	if resp := check("Mcp-Protocol-Version", rq.info.ProtocolVersion); resp != nil {
		return resp
	}
	if resp := check("Mcp-Method", rq.Method); resp != nil {
		return resp
	}
	key, ok := nameParam[rq.Method]
	if !ok {
		return nil
	}
	var target []byte
	if paramsObject(rq.Message) {
		jsonraw.ScanObject(rq.Params, func(k, v []byte) {
			if string(k) == key {
				target = v
			}
		})
	}
	if target == nil {
		return nil // the method answers the missing member itself (-32602)
	}
	body, isString := jsonraw.String(target)
	if !isString {
		body = string(target) // a number, compared as written
	}
	return check("Mcp-Name", body)
}

// headerMismatch answers a header disagreeing with the body: -32020,
// HTTP 400, both values in data.
func (s *Server) headerMismatch(rq *request, name, header, body string) []byte {
	data := append([]byte(`{"mismatch":{"header":`), jsonraw.AppendString(nil, header)...)
	data = append(data, `,"body":`...)
	data = jsonraw.AppendString(data, body)
	data = append(data, `}}`...)
	return s.reject(rq, http.StatusBadRequest, CodeHeaderMismatch,
		"Bad Request: the request headers and body disagree: "+name, data)
}

// headerValue returns the decoded value of a header, or "" when it is
// absent or malformed.
func headerValue(h http.Header, name string) string {
	if h == nil {
		return ""
	}
	v, _ := decodeHeaderValue(h.Get(name))
	return v
}

// decodeHeaderValue trims optional whitespace, decodes the
// =?base64?…?= form clients use for values that are not plain visible
// ASCII, and rejects values that are neither.
func decodeHeaderValue(v string) (string, bool) {
	v = strings.Trim(v, " \t")
	if inner, ok := strings.CutPrefix(v, "=?base64?"); ok {
		if inner, ok = strings.CutSuffix(inner, "?="); ok {
			d, err := base64.StdEncoding.DecodeString(inner)
			if err != nil || !utf8.Valid(d) {
				return "", false
			}
			return string(d), true
		}
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c >= 0x7f {
			return "", false
		}
	}
	return v, true
}
