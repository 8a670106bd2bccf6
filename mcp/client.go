package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbe/agent-backend/internal/jsonraw"
)

// ErrClosed is returned by a Client after Close or after its connection
// ended.
var ErrClosed = errors.New("mcp: client closed")

// ClientOptions configures a Client. The zero value is usable.
type ClientOptions struct {
	// Info names the client in initialize; the zero value sends
	// {"name":"agentbe-client","version":"0"}.
	Info Implementation
	// ProtocolVersion is the version the Client speaks. "" negotiates:
	// the modern era first (server/discover at LatestProtocolVersion),
	// falling back to an initialize handshake at
	// LatestLegacyProtocolVersion when the server does not speak it. A
	// modern version asks for exactly that (no fallback); a legacy one
	// skips discovery and asks initialize for it.
	ProtocolVersion string
}

// InitializeResult is what the server said about itself when the Client
// connected: its initialize result, or in the modern era its
// server/discover result (ProtocolVersion then being the version the
// Client uses, ServerInfo the identity in the result's _meta).
type InitializeResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ServerInfo      Implementation  `json:"serverInfo"`
	Instructions    string          `json:"instructions,omitempty"`
}

// rpcHeaders are what a modern request repeats in Streamable HTTP headers.
type rpcHeaders struct {
	version, method, name string
}

// clientTransport carries encoded messages. roundTrip sends a request and
// returns the raw response whose id is id (rh is set for a modern request);
// notify sends a notification.
type clientTransport interface {
	roundTrip(ctx context.Context, id json.RawMessage, msg []byte, rh *rpcHeaders) ([]byte, error)
	notify(ctx context.Context, msg []byte) error
	setProtocolVersion(v string)
	close() error
}

// Client is an MCP client over a stream (stdio), Streamable HTTP or
// directly connected to an in-process Server. It is safe for concurrent
// use. It never retries: a failed call returns its error.
//
// Cancelling the context of a call sends notifications/cancelled for it
// and returns the context's error.
type Client struct {
	t      clientTransport
	opts   ClientOptions
	nextID atomic.Int64
	closed atomic.Bool

	mu   sync.Mutex
	init *InitializeResult
	// meta is the _meta object every request carries once the Client
	// speaks the modern era (nil in the legacy era); version its version.
	meta    []byte
	version string
}

func newClient(t clientTransport, opts ClientOptions) *Client {
	if opts.Info.Name == "" {
		opts.Info = Implementation{Name: "agentbe-client", Version: "0"}
	}
	return &Client{t: t, opts: opts}
}

// modernMeta returns the _meta object of a modern request at version v.
func (c *Client) modernMeta(v string) []byte {
	b := []byte(`{"` + MetaProtocolVersion + `":`)
	b = jsonraw.AppendString(b, v)
	b = append(b, `,"`+MetaClientCapabilities+`":{},"`+MetaClientInfo+`":`...)
	info, _ := json.Marshal(c.opts.Info)
	b = append(b, info...)
	return append(b, '}')
}

// call sends a request and decodes its result into out (if non-nil).
func (c *Client) call(ctx context.Context, method string, params any, out any) error {
	c.mu.Lock()
	meta, version := c.meta, c.version
	c.mu.Unlock()
	return c.callAt(ctx, meta, version, method, params, out)
}

// callAt is call in the modern era at version with meta, or in the legacy
// era when meta is nil.
func (c *Client) callAt(ctx context.Context, meta []byte, version, method string, params any, out any) error {
	if c.closed.Load() {
		return ErrClosed
	}
	var rh *rpcHeaders
	if meta != nil {
		raw, err := marshalParams(params)
		if err != nil {
			return fmt.Errorf("mcp: encoding %s params: %w", method, err)
		}
		params = withMeta(raw, meta)
		rh = &rpcHeaders{version: version, method: method}
		if method == "tools/call" {
			var p struct {
				Name string `json:"name"`
			}
			json.Unmarshal(raw, &p)
			rh.name = p.Name
		}
	}
	id := json.RawMessage(strconv.FormatInt(c.nextID.Add(1), 10))
	req, err := EncodeRequest(id, method, params)
	if err != nil {
		return fmt.Errorf("mcp: encoding %s params: %w", method, err)
	}
	raw, err := c.t.roundTrip(ctx, id, req, rh)
	if err != nil {
		if ctx.Err() != nil && !c.closed.Load() {
			// In the modern era over HTTP, closing the response stream
			// (which the cancelled context did) is the cancellation.
			if _, isHTTP := c.t.(*httpTransport); meta == nil || !isHTTP {
				c.sendCancel(ctx, id)
			}
			return ctx.Err()
		}
		return err
	}
	m, err := DecodeMessage(raw)
	if err != nil {
		return fmt.Errorf("mcp: bad response to %s: %w", method, err)
	}
	if m.Error != nil {
		return m.Error
	}
	if meta != nil {
		if rt := resultType(m.Result); rt != "" && rt != "complete" {
			return fmt.Errorf("mcp: %s answered with result type %q, which this client does not handle", method, rt)
		}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(m.Result, out); err != nil {
		return fmt.Errorf("mcp: bad %s result: %w", method, err)
	}
	return nil
}

func (c *Client) sendCancel(ctx context.Context, id json.RawMessage) {
	msg, _ := EncodeRequest(nil, "notifications/cancelled",
		json.RawMessage(`{"requestId":`+string(id)+`,"reason":"`+ctx.Err().Error()+`"}`))
	nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	c.t.notify(nctx, msg)
}

// Initialize connects: it negotiates the protocol era with the server and
// returns what the server said about itself. With the default
// ClientOptions.ProtocolVersion it sends server/discover in the modern era
// first; a server that answers it is spoken to in that era from then on
// (every request carrying the version, the client's capabilities and
// identity in _meta). A server that refuses it the way a legacy server
// does (method not found, an HTTP 4xx without a modern error, any error
// but the modern era's own -32020, -32021 and -32022) gets the 2025
// initialize handshake and notifications/initialized instead. A -32022
// naming a modern version this package speaks is retried once with it.
// It fails if the server settles on a version this package does not
// support.
func (c *Client) Initialize(ctx context.Context) (*InitializeResult, error) {
	want := c.opts.ProtocolVersion
	if want != "" && !isModernVersion(want) {
		return c.initializeLegacy(ctx, want)
	}
	v := want
	if v == "" {
		v = LatestProtocolVersion
	}
	res, err := c.discover(ctx, v)
	if err == nil {
		return res, nil
	}
	var re *RPCError
	if errors.As(err, &re) && re.Code == CodeUnsupportedProtocolVersion {
		var d struct {
			Supported []string `json:"supported"`
		}
		json.Unmarshal(re.Data, &d)
		for _, sv := range d.Supported {
			if isModernVersion(sv) && sv != v && (want == "" || sv == want) {
				return c.discover(ctx, sv)
			}
		}
		legacy := false
		for _, sv := range d.Supported {
			legacy = legacy || isLegacyVersion(sv)
		}
		if !legacy || want != "" {
			return nil, fmt.Errorf("mcp: server speaks none of this client's modern protocol versions: %w", err)
		}
	} else if errors.As(err, &re) && (re.Code == CodeHeaderMismatch || re.Code == CodeMissingClientCapability) {
		return nil, err // a modern server refusing this request: no fallback
	}
	if want != "" || !legacyRefusal(err) {
		return nil, err // pinned, or a failure that says nothing about the era
	}
	return c.initializeLegacy(ctx, LatestLegacyProtocolVersion)
}

// legacyRefusal reports whether err is how a server that does not speak
// the modern era refuses server/discover: a JSON-RPC error, or an HTTP
// 400, 404 or 405. Transport failures (a lost connection, a 5xx, a 401)
// are returned as they are, never taken for an answer.
func legacyRefusal(err error) bool {
	var se *statusErr
	if errors.As(err, &se) {
		return se.status == http.StatusBadRequest || se.status == http.StatusNotFound || se.status == http.StatusMethodNotAllowed
	}
	var nm *notModernError
	if errors.As(err, &nm) {
		return true
	}
	var re *RPCError
	return errors.As(err, &re)
}

// notModernError: server/discover was answered, but not with the version
// asked for (a server that answers any method, or speaks other versions).
type notModernError struct{ msg string }

func (e *notModernError) Error() string { return e.msg }

// discover sends server/discover at version v and, when the server lists
// v, makes the Client speak the modern era at v.
func (c *Client) discover(ctx context.Context, v string) (*InitializeResult, error) {
	meta := c.modernMeta(v)
	var res struct {
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
		Instructions      string          `json:"instructions"`
		Meta              struct {
			ServerInfo Implementation `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if err := c.callAt(ctx, meta, v, "server/discover", nil, &res); err != nil {
		return nil, err
	}
	if !contains(res.SupportedVersions, v) {
		return nil, &notModernError{fmt.Sprintf("mcp: server/discover does not list protocol version %s (it lists %v)", v, res.SupportedVersions)}
	}
	init := &InitializeResult{ProtocolVersion: v, Capabilities: res.Capabilities,
		ServerInfo: res.Meta.ServerInfo, Instructions: res.Instructions}
	c.t.setProtocolVersion("") // modern requests name their version themselves
	c.mu.Lock()
	c.init, c.meta, c.version = init, meta, v
	c.mu.Unlock()
	return init, nil
}

// initializeLegacy performs the initialize handshake asking for version
// and sends notifications/initialized.
func (c *Client) initializeLegacy(ctx context.Context, version string) (*InitializeResult, error) {
	params := map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{},
		"clientInfo":      c.opts.Info,
	}
	var res InitializeResult
	if err := c.call(ctx, "initialize", params, &res); err != nil {
		return nil, err
	}
	if !isLegacyVersion(res.ProtocolVersion) {
		return nil, fmt.Errorf("mcp: server negotiated unsupported protocol version %q", res.ProtocolVersion)
	}
	c.t.setProtocolVersion(res.ProtocolVersion)
	note, _ := EncodeRequest(nil, "notifications/initialized", nil)
	if err := c.t.notify(ctx, note); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.init = &res
	c.mu.Unlock()
	return &res, nil
}

// Initialized returns the result of a successful Initialize, or nil.
func (c *Client) Initialized() *InitializeResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.init
}

// Ping checks that the server answers: ping in the legacy era,
// server/discover in the modern one (which has no ping).
func (c *Client) Ping(ctx context.Context) error {
	c.mu.Lock()
	modern := c.meta != nil
	c.mu.Unlock()
	if modern {
		return c.call(ctx, "server/discover", nil, nil)
	}
	return c.call(ctx, "ping", nil, nil)
}

// ProtocolVersion returns the version the Client speaks since Initialize,
// or "" before.
func (c *Client) ProtocolVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.init == nil {
		return ""
	}
	return c.init.ProtocolVersion
}

// withMeta returns the params object raw (nil: none) with "_meta" set to
// meta in front.
func withMeta(raw, meta []byte) json.RawMessage {
	b := append(make([]byte, 0, len(raw)+len(meta)+16), `{"_meta":`...)
	b = append(b, meta...)
	raw = bytes.TrimSpace(raw)
	if len(raw) > 1 && raw[0] == '{' {
		rest := bytes.TrimSpace(raw[1:])
		if len(rest) > 0 && rest[0] != '}' {
			b = append(b, ',')
		}
		return append(b, rest...)
	}
	return append(b, '}')
}

// resultType returns the resultType member of a raw result, or "".
func resultType(result []byte) string {
	rt := ""
	if len(result) > 0 && result[0] == '{' {
		jsonraw.ScanObject(result, func(k, v []byte) {
			if string(k) == "resultType" {
				rt, _ = jsonraw.String(v)
			}
		})
	}
	return rt
}

// ListTools returns the server's tools, following nextCursor pages.
func (c *Client) ListTools(ctx context.Context) ([]Tool, error) {
	var all []Tool
	cursor := ""
	for {
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		var res struct {
			Tools      []Tool `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := c.call(ctx, "tools/list", params, &res); err != nil {
			return nil, err
		}
		all = append(all, res.Tools...)
		if res.NextCursor == "" || res.NextCursor == cursor {
			return all, nil
		}
		cursor = res.NextCursor
	}
}

// CallTool calls a tool. args may be nil, a json.RawMessage or []byte
// holding a JSON object, or any value encoding/json turns into an object.
// A tool failure is a result with IsError set and a nil error; the error is
// non-nil only for protocol and transport failures (*RPCError for a
// JSON-RPC error response).
func (c *Client) CallTool(ctx context.Context, name string, args any) (*CallToolResult, error) {
	var rawArgs json.RawMessage
	if args != nil {
		var err error
		if rawArgs, err = marshalParams(args); err != nil {
			return nil, fmt.Errorf("mcp: encoding arguments of %s: %w", name, err)
		}
	}
	b := jsonraw.AppendString([]byte(`{"name":`), name)
	if rawArgs != nil {
		b = append(b, `,"arguments":`...)
		b = append(b, rawArgs...)
	}
	b = append(b, '}')
	var res CallToolResult
	if err := c.call(ctx, "tools/call", json.RawMessage(b), &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Close ends the connection: a stream client closes its stream and waits
// for its reader to stop; an HTTP client runs HTTPClientOptions.OnClose.
// Calls in flight fail with ErrClosed. Close is idempotent.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.t.close()
}
