package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for one writer and one reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

type httpReply struct {
	status int
	id     json.RawMessage
	code   int
	data   json.RawMessage
	result map[string]json.RawMessage
}

func post(t *testing.T, url, body string, hdr map[string]string) httpReply {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header[http.CanonicalHeaderKey(k)] = []string{v}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m struct {
		ID     json.RawMessage            `json:"id"`
		Result map[string]json.RawMessage `json:"result"`
		Error  *RPCError                  `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	r := httpReply{status: resp.StatusCode, id: m.ID, result: m.Result}
	if m.Error != nil {
		r.code, r.data = m.Error.Code, m.Error.Data
	}
	return r
}

// modernHeaders are the standard headers of a modern request.
func modernHeaders(method, name string) map[string]string {
	h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// TestModernHTTP checks the 2026-07-28 era of the Streamable HTTP
// transport: results, the _meta envelope, the header checks, the HTTP
// status of each protocol error and the id every error echoes.
func TestModernHTTP(t *testing.T) {
	ts := httptest.NewServer(NewHTTPHandler(func(*http.Request) (*Server, func(), error) { return protoServer(), nil, nil }, HTTPOptions{}))
	defer ts.Close()
	req := func(method, params string) string {
		return `{"jsonrpc":"2.0","id":"r-7","method":"` + method + `","params":{` + params + `}}`
	}
	call := req("tools/call", meta2026+`,"name":"echo","arguments":{"text":"x"}`)
	for _, tc := range []struct {
		name   string
		body   string
		hdr    map[string]string
		status int
		code   int
		data   string // substring of the error data
	}{
		{"discover", req("server/discover", meta2026), modernHeaders("server/discover", ""), 200, 0, ""},
		{"discover without clientInfo ok, tools/call", call, modernHeaders("tools/call", "echo"), 200, 0, ""},
		{"name base64", call, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "=?base64?ZWNobw==?="}, 200, 0, ""},
		{"name with blanks", call, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "  echo  "}, 200, 0, ""},
		{"missing capabilities", req("tools/list", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), modernHeaders("tools/list", ""), 400, CodeInvalidParams, `"io.modelcontextprotocol/clientCapabilities"`},
		{"unsupported version", req("tools/list", `"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}`),
			map[string]string{"Mcp-Protocol-Version": "1999-01-01", "Mcp-Method": "tools/list"}, 400, CodeUnsupportedProtocolVersion, `"supported":["2026-07-28"],"requested":"1999-01-01"`},
		{"header version mismatch", req("tools/list", meta2026), map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/list"}, 400, CodeHeaderMismatch, ""},
		{"method mismatch", req("tools/list", meta2026), modernHeaders("TOOLS/LIST", ""), 400, CodeHeaderMismatch, ""},
		{"method missing", req("tools/list", meta2026), map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, 400, CodeHeaderMismatch, ""},
		{"name mismatch", call, modernHeaders("tools/call", "fail"), 400, CodeHeaderMismatch, `"header":"fail","body":"echo"`},
		{"name missing", call, modernHeaders("tools/call", ""), 400, CodeHeaderMismatch, ""},
		{"name not ASCII", call, modernHeaders("tools/call", "\xc3\xa9cho"), 400, CodeHeaderMismatch, ""},
		{"ping removed", req("ping", meta2026), modernHeaders("ping", ""), 404, CodeMethodNotFound, ""},
		{"initialize removed", req("initialize", meta2026+`,"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}`), modernHeaders("initialize", ""), 404, CodeMethodNotFound, ""},
		{"setLevel removed", req("logging/setLevel", meta2026+`,"level":"debug"`), modernHeaders("logging/setLevel", ""), 404, CodeMethodNotFound, ""},
		{"unknown method", req("no/such", meta2026), modernHeaders("no/such", ""), 404, CodeMethodNotFound, ""},
		{"modern header without envelope", req("tools/list", ""), modernHeaders("tools/list", ""), 400, CodeInvalidParams, ""},
		{"bad log level", req("tools/list", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}`), modernHeaders("tools/list", ""), 400, CodeInvalidParams, "logLevel"},
		{"unknown tool in-band", req("tools/call", meta2026+`,"name":"nope"`), modernHeaders("tools/call", "nope"), 200, CodeInvalidParams, ""},
		{"legacy discover", req("server/discover", ""), nil, 200, CodeMethodNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, ts.URL, tc.body, tc.hdr)
			if r.status != tc.status || r.code != tc.code || !strings.Contains(string(r.data), tc.data) {
				t.Fatalf("got %d %d %s, want %d %d %s", r.status, r.code, r.data, tc.status, tc.code, tc.data)
			}
			if string(r.id) != `"r-7"` {
				t.Fatalf("id %s not echoed", r.id)
			}
			if tc.code == 0 && string(r.result["resultType"]) != `"complete"` {
				t.Fatalf("result without resultType: %v", r.result)
			}
		})
	}
	// discover and tools/list carry the cache hints and serverInfo.
	for _, m := range []string{"server/discover", "tools/list"} {
		r := post(t, ts.URL, req(m, meta2026), modernHeaders(m, ""))
		if string(r.result["ttlMs"]) != "0" || string(r.result["cacheScope"]) != `"private"` ||
			!bytes.Contains(r.result["_meta"], []byte(`"io.modelcontextprotocol/serverInfo":{"name":"agent-backend","version":"1.2.3"}`)) {
			t.Fatalf("%s: %v", m, r.result)
		}
	}
	// Every schema states the 2020-12 dialect; no execution member.
	r := post(t, ts.URL, req("tools/list", meta2026), modernHeaders("tools/list", ""))
	var tools []map[string]json.RawMessage
	json.Unmarshal(r.result["tools"], &tools)
	for _, tool := range tools {
		if !bytes.HasPrefix(tool["inputSchema"], []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema"`)) || tool["execution"] != nil {
			t.Fatalf("tool %s", tool["name"])
		}
	}
	// The legacy era is unchanged: initialize works, results carry no
	// resultType.
	r = post(t, ts.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, nil)
	if string(r.result["protocolVersion"]) != `"2025-06-18"` || r.result["resultType"] != nil {
		t.Fatalf("legacy initialize: %v", r.result)
	}
	r = post(t, ts.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{"Mcp-Protocol-Version": "2025-06-18"})
	if r.status != 200 || r.result["resultType"] != nil || r.result["ttlMs"] != nil {
		t.Fatalf("legacy tools/list: %d %v", r.status, r.result)
	}
}

// TestModernStdioPinning checks that the first message of a stdio
// connection decides its era for good.
func TestModernStdioPinning(t *testing.T) {
	disc := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta2026 + `}}`
	init := `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	bad := `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`
	list := `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string // per response, in order: "ok" or an error code
	}{
		{"modern then initialize", []string{disc, init}, []string{"ok", "-32022"}},
		{"modern then no envelope", []string{disc, list}, []string{"ok", "-32602"}},
		{"legacy then discover", []string{init, disc}, []string{"ok", "-32601"}},
		{"refused claim decides nothing", []string{bad, init, list}, []string{"-32022", "ok", "ok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out lockedBuffer
			pr, pw := io.Pipe()
			done := make(chan error)
			go func() { done <- ServeStdio(context.Background(), protoServer(), pr, &out) }()
			for _, l := range tc.lines {
				// one at a time, so the answers come in order
				before := strings.Count(out.String(), "\n")
				pw.Write([]byte(l + "\n"))
				for strings.Count(out.String(), "\n") == before {
					time.Sleep(time.Millisecond)
				}
			}
			pw.Close()
			<-done
			got := strings.Split(strings.TrimSpace(out.String()), "\n")
			for i, w := range tc.want {
				var m struct {
					Error *RPCError `json:"error"`
				}
				json.Unmarshal([]byte(got[i]), &m)
				g := "ok"
				if m.Error != nil {
					g = strconv.Itoa(m.Error.Code)
				}
				if g != w {
					t.Fatalf("response %d = %s, want %s", i, got[i], w)
				}
			}
		})
	}
}

// TestModernTraceparent checks that a request's traceparent reaches the
// tool (mcp.Traceparent) and the Server's log lines.
func TestModernTraceparent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var logs bytes.Buffer
	var seen string
	s := testServer(Implementation{Name: "t", Version: "1"}, ServerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))},
		testTool{Tool{Name: "boom", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ json.RawMessage) (*CallToolResult, error) {
			seen = Traceparent(ctx)
			panic("boom")
		}})
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"` + tp + `"},"name":"boom"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"traceparent":"` + tp + `"},"name":"boom"}}`,
	} {
		seen = ""
		logs.Reset()
		s.HandleBytes(context.Background(), []byte(m))
		if seen != tp || !strings.Contains(logs.String(), "traceparent="+tp) {
			t.Fatalf("traceparent: tool saw %q; log %q", seen, logs.String())
		}
	}
	if validTraceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01") || validTraceparent("zz") {
		t.Fatal("invalid traceparent accepted")
	}
}

// TestModernHTTPCancelByClosing: in the modern era a client cancels by
// closing the response stream; the tool's context must end.
func TestModernHTTPCancelByClosing(t *testing.T) {
	started, ended := make(chan struct{}), make(chan struct{})
	s := func() *Server {
		return testServer(Implementation{Name: "t", Version: "1"}, ServerOptions{},
			testTool{Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ json.RawMessage) (*CallToolResult, error) {
				close(started)
				<-ctx.Done()
				close(ended)
				return nil, ctx.Err()
			}})
	}
	ts := httptest.NewServer(NewHTTPHandler(func(*http.Request) (*Server, func(), error) { return s(), nil, nil }, HTTPOptions{}))
	defer ts.Close()
	c := NewHTTPClient(ts.URL, HTTPClientOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := c.Initialize(ctx); err != nil || c.ProtocolVersion() != ProtocolVersion2026 {
		t.Fatalf("initialize: %v %s", err, c.ProtocolVersion())
	}
	errc := make(chan error, 1)
	go func() { _, err := c.CallTool(ctx, "block", nil); errc <- err }()
	<-started
	cancel()
	<-ended
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("call: %v", err)
	}
}

// TestClientFallsBackToInitialize: against servers that do not speak the
// modern era the Client falls back to initialize at 2025-11-25, whatever
// the refusal looks like; against a modern refusal it does not.
func TestClientFallsBackToInitialize(t *testing.T) {
	legacy := func(discover func(w http.ResponseWriter, id json.RawMessage)) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			m, err := DecodeMessage(b)
			if err != nil {
				w.WriteHeader(400)
				return
			}
			switch m.Method {
			case "server/discover":
				discover(w, m.ID)
			case "initialize":
				w.Header().Set("Content-Type", "application/json")
				w.Write(appendResponse(nil, m.ID, json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"old","version":"1"}}`)))
			default:
				w.WriteHeader(202)
			}
		}))
	}
	for _, tc := range []struct {
		name     string
		discover func(w http.ResponseWriter, id json.RawMessage)
		want     string // version, or "error"
	}{
		{"method not found in-band", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(appendError(nil, id, CodeMethodNotFound, "Method not found", nil))
		}, LatestLegacyProtocolVersion},
		{"404 plain", func(w http.ResponseWriter, id json.RawMessage) { http.NotFound(w, nil) }, LatestLegacyProtocolVersion},
		{"400 not initialized", func(w http.ResponseWriter, id json.RawMessage) {
			w.WriteHeader(400)
			w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}`))
		}, LatestLegacyProtocolVersion},
		{"modern header mismatch", func(w http.ResponseWriter, id json.RawMessage) {
			w.WriteHeader(400)
			w.Write(appendError(nil, id, CodeHeaderMismatch, "mismatch", nil))
		}, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := legacy(tc.discover)
			defer ts.Close()
			c := NewHTTPClient(ts.URL, HTTPClientOptions{})
			res, err := c.Initialize(context.Background())
			if tc.want == "error" {
				if err == nil {
					t.Fatalf("fell back: %+v", res)
				}
				return
			}
			if err != nil || res.ProtocolVersion != tc.want || c.ProtocolVersion() != tc.want {
				t.Fatalf("%+v %v", res, err)
			}
		})
	}
}

// FuzzModernEnvelope feeds arbitrary _meta envelopes, methods and header
// values to the modern era: every answer must be one valid JSON-RPC
// response echoing the request's id.
func FuzzModernEnvelope(f *testing.F) {
	f.Add("tools/list", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`, "2026-07-28", "")
	f.Add("tools/call", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`, "2026-07-28", "=?base64?ZWNobw==?=")
	f.Add("server/discover", `{"io.modelcontextprotocol/protocolVersion":7,"io.modelcontextprotocol/clientInfo":[]}`, "x", "")
	f.Add("initialize", `{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/logLevel":"loud"}`, "", "\x00")
	s := protoServer()
	f.Fuzz(func(t *testing.T, method, meta, version, name string) {
		if !json.Valid([]byte(meta)) {
			return
		}
		m, err := json.Marshal(method)
		if err != nil {
			return
		}
		body := []byte(`{"jsonrpc":"2.0","id":"fz","method":` + string(m) + `,"params":{"_meta":` + meta + `,"name":"echo","arguments":{"text":"t"}}}`)
		msg, err := DecodeMessage(body)
		if err != nil {
			return
		}
		hdr := http.Header{"Mcp-Protocol-Version": {version}, "Mcp-Method": {method}, "Mcp-Name": {name}}
		resp, _ := s.serve(context.Background(), msg, serverCancels, eraPerRequest, hdr)
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *RPCError       `json:"error"`
		}
		if err := json.Unmarshal(resp, &r); err != nil || string(r.ID) != `"fz"` || (r.Result == nil) == (r.Error == nil) {
			t.Fatalf("response %q to %s", resp, body)
		}
	})
}
