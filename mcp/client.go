package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// ProtocolVersion is requested in initialize; "" means
	// LatestProtocolVersion.
	ProtocolVersion string
}

// InitializeResult is the server's answer to initialize.
type InitializeResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ServerInfo      Implementation  `json:"serverInfo"`
	Instructions    string          `json:"instructions,omitempty"`
}

// clientTransport carries encoded messages. roundTrip sends a request and
// returns the raw response whose id is id; notify sends a notification.
type clientTransport interface {
	roundTrip(ctx context.Context, id json.RawMessage, msg []byte) ([]byte, error)
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
}

func newClient(t clientTransport, opts ClientOptions) *Client {
	if opts.Info.Name == "" {
		opts.Info = Implementation{Name: "agentbe-client", Version: "0"}
	}
	if opts.ProtocolVersion == "" {
		opts.ProtocolVersion = LatestProtocolVersion
	}
	return &Client{t: t, opts: opts}
}

// call sends a request and decodes its result into out (if non-nil).
func (c *Client) call(ctx context.Context, method string, params any, out any) error {
	if c.closed.Load() {
		return ErrClosed
	}
	id := json.RawMessage(strconv.FormatInt(c.nextID.Add(1), 10))
	req, err := EncodeRequest(id, method, params)
	if err != nil {
		return fmt.Errorf("mcp: encoding %s params: %w", method, err)
	}
	raw, err := c.t.roundTrip(ctx, id, req)
	if err != nil {
		if ctx.Err() != nil && !c.closed.Load() {
			c.sendCancel(ctx, id)
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

// Initialize performs the initialize handshake and sends
// notifications/initialized. It fails if the server answers with a
// protocol version this package does not support.
func (c *Client) Initialize(ctx context.Context) (*InitializeResult, error) {
	params := map[string]any{
		"protocolVersion": c.opts.ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      c.opts.Info,
	}
	var res InitializeResult
	if err := c.call(ctx, "initialize", params, &res); err != nil {
		return nil, err
	}
	if !isSupportedVersion(res.ProtocolVersion) {
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

// Ping sends ping and waits for the empty result.
func (c *Client) Ping(ctx context.Context) error {
	return c.call(ctx, "ping", nil, nil)
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
