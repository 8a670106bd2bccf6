package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
)

// HTTPClientOptions configures NewHTTPClient.
type HTTPClientOptions struct {
	ClientOptions
	// Header is added to every request, e.g. Authorization, X-Root-Dir,
	// X-Scope-Path.
	Header http.Header
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// MaxResponseBytes limits a response body; 0 means 64 MiB.
	MaxResponseBytes int64
	// OnClose, when set, is called once when the Client is closed (its
	// owner uses it to release what it holds for the client).
	OnClose func()
}

// NewHTTPClient returns a Client for the Streamable HTTP endpoint at url.
// Responses may be application/json or text/event-stream. A session id
// the server hands out (Mcp-Session-Id) is sent back on later requests;
// after Initialize, MCP-Protocol-Version is sent too.
func NewHTTPClient(url string, opts HTTPClientOptions) *Client {
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = 64 << 20
	}
	return newClient(&httpTransport{url: url, opts: opts}, opts.ClientOptions)
}

type httpTransport struct {
	url  string
	opts HTTPClientOptions

	mu        sync.Mutex
	sessionID string
	version   string
}

// ErrHTTPStatus is wrapped by the error of a request answered with an
// unexpected HTTP status.
var ErrHTTPStatus = errors.New("mcp: unexpected HTTP status")

func (t *httpTransport) post(ctx context.Context, msg []byte, rh *rpcHeaders) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	for k, v := range t.opts.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	t.mu.Lock()
	if t.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", t.sessionID)
	}
	if t.version != "" {
		req.Header.Set("Mcp-Protocol-Version", t.version)
	}
	t.mu.Unlock()
	if rh != nil {
		req.Header.Set("Mcp-Protocol-Version", rh.version)
		req.Header.Set("Mcp-Method", encodeHeaderValue(rh.method))
		if rh.name != "" {
			req.Header.Set("Mcp-Name", encodeHeaderValue(rh.name))
		}
	}
	resp, err := t.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		t.mu.Lock()
		t.sessionID = sid
		t.mu.Unlock()
	}
	return resp, nil
}

func statusError(resp *http.Response, limit int64) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	// A JSON-RPC error body (what MCP servers send) is the useful part.
	var m struct {
		Error *RPCError `json:"error"`
	}
	if json.Unmarshal(body, &m) == nil && m.Error != nil {
		return &statusErr{resp.StatusCode, fmt.Errorf("%w %d: %w", ErrHTTPStatus, resp.StatusCode, m.Error)}
	}
	return &statusErr{resp.StatusCode, fmt.Errorf("%w %d: %s", ErrHTTPStatus, resp.StatusCode, strings.TrimSpace(string(body)))}
}

// statusErr is the error of a request answered with an unexpected HTTP
// status; it wraps ErrHTTPStatus.
type statusErr struct {
	status int
	err    error
}

func (e *statusErr) Error() string { return e.err.Error() }
func (e *statusErr) Unwrap() error { return e.err }

func (t *httpTransport) roundTrip(ctx context.Context, id json.RawMessage, msg []byte, rh *rpcHeaders) ([]byte, error) {
	resp, err := t.post(ctx, msg, rh)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if rh != nil && resp.StatusCode >= 400 && resp.StatusCode < 500 {
			// A modern server answers protocol errors with a 4xx and
			// the JSON-RPC error (echoing the id): return it as such.
			if b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10)); err == nil {
				if m, err := DecodeMessage(b); err == nil && m.Error != nil && idKey(m.ID) == idKey(id) {
					return b, nil
				}
				return nil, &statusErr{resp.StatusCode, fmt.Errorf("%w %d: %s", ErrHTTPStatus, resp.StatusCode, strings.TrimSpace(string(b)))}
			}
		}
		return nil, statusError(resp, t.opts.MaxResponseBytes)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	body := io.LimitReader(resp.Body, t.opts.MaxResponseBytes)
	switch ct {
	case "application/json":
		b, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		return pickResponse(b, id)
	case "text/event-stream":
		return readSSEResponse(body, id)
	}
	return nil, fmt.Errorf("mcp: unexpected response content type %q", resp.Header.Get("Content-Type"))
}

// pickResponse returns the response with the given id from a JSON body
// holding one message or a batch.
func pickResponse(b []byte, id json.RawMessage) ([]byte, error) {
	if isBatch(b) {
		var elems []json.RawMessage
		if err := json.Unmarshal(b, &elems); err != nil {
			return nil, fmt.Errorf("mcp: bad response body: %w", err)
		}
		for _, e := range elems {
			if idKey(idOf(e)) == idKey(id) {
				return e, nil
			}
		}
		return nil, errors.New("mcp: response batch lacks the request's id")
	}
	if got := idOf(b); got != nil && idKey(got) != idKey(id) {
		return nil, fmt.Errorf("mcp: response id %s does not match request id %s", got, id)
	}
	return b, nil
}

// readSSEResponse reads SSE events until the one carrying the response
// with the given id.
func readSSEResponse(r io.Reader, id json.RawMessage) ([]byte, error) {
	br := bufio.NewReaderSize(r, 32<<10)
	var data []byte
	found := func() bool {
		if len(data) == 0 {
			return false
		}
		m, err := DecodeMessage(data)
		if err == nil && m.IsResponse() && idKey(m.ID) == idKey(id) {
			return true
		}
		data = nil
		return false
	}
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if found() {
				return data, nil
			}
		} else if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v = bytes.TrimPrefix(v, []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
		if err != nil {
			if found() {
				return data, nil
			}
			if err == io.EOF {
				return nil, errors.New("mcp: event stream ended without a response")
			}
			return nil, err
		}
	}
}

func (t *httpTransport) notify(ctx context.Context, msg []byte) error {
	resp, err := t.post(ctx, msg, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		return statusError(resp, t.opts.MaxResponseBytes)
	}
	return nil
}

func (t *httpTransport) setProtocolVersion(v string) {
	t.mu.Lock()
	t.version = v
	t.mu.Unlock()
}

// encodeHeaderValue returns v as a header value: as it is when it is
// plain visible ASCII without surrounding blanks, else in the =?base64?…?=
// form.
func encodeHeaderValue(v string) string {
	plain := v != "" && v[0] != ' ' && v[len(v)-1] != ' ' && !strings.HasPrefix(v, "=?base64?")
	for i := 0; plain && i < len(v); i++ {
		plain = v[i] >= 0x20 && v[i] < 0x7f
	}
	if plain {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

func (t *httpTransport) close() error {
	if t.opts.OnClose != nil {
		t.opts.OnClose()
	}
	return nil
}
