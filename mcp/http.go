package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/agentbe/agent-backend/internal/hostcheck"
	"github.com/agentbe/agent-backend/internal/jsonraw"
	"github.com/agentbe/agent-backend/internal/sse"
)

// DefaultMaxBodyBytes is the request body limit of the HTTP handler when
// HTTPOptions.MaxBodyBytes is zero.
const DefaultMaxBodyBytes = 32 << 20

// maxBatchSize is the largest batch the HTTP transport accepts, as in the
// official SDK.
const maxBatchSize = 100

// HTTPOptions configures NewHTTPHandler. The zero value is the safe
// default.
type HTTPOptions struct {
	// MaxBodyBytes limits a request body; larger bodies get 413.
	// 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// AllowedHosts are extra host names (without port) accepted in the Host
	// and Origin headers when the listener is on a loopback address. The
	// loopback names localhost, 127.0.0.1 and ::1 are always accepted.
	// Requests that arrive on a non-loopback address are not checked.
	AllowedHosts []string
	// DisableHostCheck turns that DNS-rebinding check off. Set it only
	// when a wrapping handler applies its own Host and Origin rule to every
	// request first, as the agentbe daemon's guard does for every route.
	DisableHostCheck bool
	// CancelKey groups in-flight requests for notifications/cancelled. A
	// stateless client sends the cancellation in a separate POST, so the
	// handler keeps a process-wide table of running requests keyed by
	// CancelKey(r) and the JSON-RPC id; a cancellation only reaches
	// requests with the same key. nil means the client's IP address, its
	// Authorization header and its Mcp-Session-Id header.
	CancelKey func(r *http.Request) string
	// Logger receives transport errors. nil discards them.
	Logger *slog.Logger
}

// ServerFactory returns the Server that answers one request of the HTTP
// handler, built for that request (on its headers, its tenant, its
// scope), and the function that releases what it made for it, or nil.
// The handler calls release once it is done with the Server: the response
// is written and every call of the request has returned, whatever the
// outcome (a release returned with an error is called too). A factory that
// makes resources per request (an agentbe Scope for an X-Scope-Path
// header) frees them there, so nothing outlives the request.
//
// An *HTTPError refuses the request with its status and body; any other
// error is answered 500.
type ServerFactory func(r *http.Request) (s *Server, release func(), err error)

// HTTPError is an error the server factory of NewHTTPHandler returns to
// answer a request itself: the handler replies with Status and Body encoded
// as JSON (a nil Body gives an empty body).
type HTTPError struct {
	Status int
	Body   any
}

func (e *HTTPError) Error() string {
	return "mcp: HTTP " + strconv.Itoa(e.Status) + " " + http.StatusText(e.Status)
}

// NewHTTPHandler returns the Streamable HTTP transport in its stateless
// form. Every POST gets a Server from newServer (so the Server may depend
// on the request, e.g. on its headers) and is answered on its own:
//
//   - a JSON-RPC message or batch with requests → 200 with application/json
//     (text/event-stream when the client accepts only that);
//   - only notifications or responses → 202 with no body;
//   - GET, DELETE and other methods → 405 (no standalone SSE stream, no
//     sessions);
//   - Accept without application/json or text/event-stream → 406,
//     Content-Type other than application/json → 415, a body over the
//     limit → 413, invalid JSON → 400 with a -32700 error, more than 100
//     messages in a batch → 400, all with the official SDK's JSON-RPC error
//     bodies;
//   - on a loopback listener, a Host or Origin naming another host → 403
//     (DNS-rebinding protection; see HTTPOptions.DisableHostCheck).
//
// newServer runs after the DNS-rebinding, method, Accept and Content-Type
// checks (requests that fail them never build a Server) and before the
// body is read, so authentication and request validation can live there or
// in a wrapping handler; see ServerFactory.
func NewHTTPHandler(newServer ServerFactory, opts HTTPOptions) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.CancelKey == nil {
		opts.CancelKey = defaultCancelKey
	}
	return &httpHandler{newServer: newServer, opts: opts, running: make(map[string][]*runningCall),
		allowed: hostcheck.Normalize(opts.AllowedHosts)}
}

type httpHandler struct {
	newServer ServerFactory
	opts      HTTPOptions
	allowed   []string

	mu      sync.Mutex
	running map[string][]*runningCall
}

type runningCall struct {
	cancel context.CancelCauseFunc
}

func defaultCancelKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return host + "\x00" + r.Header.Get("Authorization") + "\x00" + r.Header.Get("Mcp-Session-Id")
}

// contentTypeJSON is shared by every response: net/http only reads it.
var contentTypeJSON = []string{"application/json"}

func writeJSONRPCError(w http.ResponseWriter, status, code int, msg string) {
	w.Header()["Content-Type"] = contentTypeJSON
	w.WriteHeader(status)
	w.Write(appendError(nil, nil, code, msg, nil))
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if msg := h.rebinding(r); msg != "" {
		writeJSONRPCError(w, http.StatusForbidden, -32000, msg)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeJSONRPCError(w, http.StatusMethodNotAllowed, -32000, "Method not allowed.")
		return
	}
	acceptJSON, acceptSSE := parseAccept(r.Header.Values("Accept"))
	if !acceptJSON && !acceptSSE {
		writeJSONRPCError(w, http.StatusNotAcceptable, -32000, "Not Acceptable: Client must accept both application/json and text/event-stream")
		return
	}
	if !isJSONContentType(r.Header.Get("Content-Type")) {
		writeJSONRPCError(w, http.StatusUnsupportedMediaType, -32000, "Unsupported Media Type: Content-Type must be application/json")
		return
	}
	srv, release, err := h.newServer(r)
	if release != nil {
		defer func() {
			if srv != nil {
				// A task the request started keeps what was made for it.
				srv.releaseWhenIdle(release)
			} else {
				release()
			}
		}()
	}
	if err != nil {
		var he *HTTPError
		if errors.As(err, &he) {
			w.Header()["Content-Type"] = contentTypeJSON
			w.WriteHeader(he.Status)
			if he.Body != nil {
				b, _ := appendAny(nil, he.Body)
				w.Write(b)
			}
			return
		}
		h.log("mcp: server factory failed", "err", err)
		writeJSONRPCError(w, http.StatusInternalServerError, CodeInternalError, "Internal server error")
		return
	}
	if srv == nil {
		h.log("mcp: server factory returned no server")
		writeJSONRPCError(w, http.StatusInternalServerError, CodeInternalError, "Internal server error")
		return
	}
	h.serve(w, r, srv, acceptJSON, acceptSSE)
}

// serve answers a request that passed the header checks with srv.
func (h *httpHandler) serve(w http.ResponseWriter, r *http.Request, srv *Server, acceptJSON, acceptSSE bool) {
	buf, tooLarge, err := readBody(r, h.opts.MaxBodyBytes)
	if tooLarge {
		writeJSONRPCError(w, http.StatusRequestEntityTooLarge, -32000,
			"Payload Too Large: Request body must not exceed "+strconv.FormatInt(h.opts.MaxBodyBytes, 10)+" bytes")
		return
	}
	if err != nil {
		putBody(buf)
		writeJSONRPCError(w, http.StatusBadRequest, CodeParseError, "Parse error: Invalid JSON")
		return
	}
	msgs, status, code, msg := decodeHTTPMessages(buf.Bytes())
	putBody(buf)
	if status != 0 {
		writeJSONRPCError(w, status, code, msg)
		return
	}
	hasInit, claimed := false, false
	for _, m := range msgs {
		if m.Method == "initialize" && m.IsRequest() {
			hasInit = true
		}
		if _, ok := metaClaim(m); ok {
			claimed = true
		}
	}
	// A modern request names its version in _meta; the Server checks the
	// header against it (-32022 or -32020, with the request's id).
	if !hasInit && !claimed {
		if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !isSupportedVersion(v) {
			writeJSONRPCError(w, http.StatusBadRequest, -32000, "Bad Request: Unsupported protocol version: "+v+
				" (supported versions: "+strings.Join(SupportedProtocolVersions, ", ")+")")
			return
		}
	}

	ctx := r.Context()
	key := ""
	var requests []*Message
	for _, m := range msgs {
		if m.IsRequest() {
			requests = append(requests, m)
			continue
		}
		if m.Method == "notifications/cancelled" {
			if key == "" {
				key = h.opts.CancelKey(r)
			}
			h.cancel(key, CancelledRequestID(m.Params))
		}
		srv.Handle(ctx, m)
	}
	if len(requests) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if key == "" {
		key = h.opts.CancelKey(r)
	}
	if !acceptJSON {
		h.serveSSE(ctx, w, r, srv, key, requests)
		return
	}
	if len(requests) == 1 {
		var up *sseUpgrade
		rctx := ctx
		if acceptSSE && streamsNotifications(requests[0]) {
			// A tool reporting progress, or a listen, turns the response
			// into an SSE stream: the notifications, then the response.
			var cancel context.CancelFunc
			rctx, cancel = context.WithCancel(ctx)
			defer cancel()
			up = &sseUpgrade{w: w, cancel: cancel}
			rctx = withNotifier(rctx, up)
		}
		resp, status := h.run(rctx, srv, key, requests[0], r.Header)
		if up.finish(resp) {
			releaseResponse(resp)
			return
		}
		if resp == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		hdr := w.Header()
		hdr["Content-Type"] = contentTypeJSON
		hdr["Content-Length"] = []string{strconv.Itoa(len(resp))}
		if status != 0 {
			w.WriteHeader(status)
		}
		w.Write(resp)
		releaseResponse(resp)
		return
	}
	resps := make([][]byte, len(requests))
	var wg sync.WaitGroup
	for i, m := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resps[i], _ = h.run(ctx, srv, key, m, r.Header)
		}()
	}
	wg.Wait()
	ids := make([]json.RawMessage, len(requests))
	for i, m := range requests {
		ids[i] = m.ID
	}
	srv.fitBatch(resps, ids)
	var out []byte
	n := 0
	for _, r := range resps {
		if r != nil {
			n++
		}
	}
	if n == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if n > 1 {
		out = append(out, '[')
	}
	first := true
	for _, r := range resps {
		if r == nil {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, r...)
	}
	if n > 1 {
		out = append(out, ']')
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.Write(out)
}

// serveSSE answers the requests as SSE "message" events in the order they
// finish, then ends the stream. A client that takes nothing for
// sseWriteTimeout loses the stream, and its requests are cancelled.
func (h *httpHandler) serveSSE(ctx context.Context, w http.ResponseWriter, r *http.Request, srv *Server, key string, requests []*Message) {
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	stream, err := sse.Start(w, sseWriteTimeout)
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	writeEvent := func(msg []byte) {
		if stream.Event("message", "", msg) != nil {
			cancel()
		}
	}
	var wg sync.WaitGroup
	for _, m := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx := ctx
			if streamsNotifications(m) {
				rctx = withNotifier(ctx, notifyFunc(writeEvent))
			}
			if resp, _ := h.run(rctx, srv, key, m, r.Header); resp != nil {
				writeEvent(resp)
			}
		}()
	}
	wg.Wait()
}

// sseWriteTimeout bounds each write of an SSE answer: a client that takes
// nothing for that long is gone or stuck. A variable for tests.
var sseWriteTimeout = sse.DefaultWriteTimeout

// streamsNotifications reports whether the answer to m may carry
// notifications before the response: a tools/call asking for progress, a
// subscriptions/listen.
func streamsNotifications(m *Message) bool {
	return m.Method == "tools/call" && progressToken(m) != nil || m.Method == "subscriptions/listen"
}

// sseUpgrade turns the answer to one request into an SSE stream when the
// request's tool sends a notification (progress) before its response:
// the first notification writes the SSE headers, each is an event, and
// the response is the last event. A request that sends none is answered
// with plain JSON. A stream whose client takes nothing for
// sseWriteTimeout ends, and cancel cancels the request.
type sseUpgrade struct {
	w      http.ResponseWriter
	cancel context.CancelFunc

	mu      sync.Mutex
	stream  *sse.Stream
	started bool
	done    bool
}

func (u *sseUpgrade) notify(msg []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return
	}
	if !u.started {
		u.started = true
		u.w.Header().Set("Cache-Control", "no-cache, no-transform")
		var err error
		if u.stream, err = sse.Start(u.w, sseWriteTimeout); err != nil {
			u.cancel()
			return
		}
	}
	u.writeEvent(msg)
}

// writeEvent sends msg as one event; the caller holds u.mu.
func (u *sseUpgrade) writeEvent(msg []byte) {
	if u.stream.Event("message", "", msg) != nil {
		u.cancel()
	}
}

// finish ends the upgrade and reports whether the response went out as
// the stream's last event (the stream had started); otherwise the caller
// answers as usual. A nil u has not started.
func (u *sseUpgrade) finish(resp []byte) bool {
	if u == nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.done = true
	if !u.started {
		return false
	}
	if resp != nil {
		u.writeEvent(resp)
	}
	return true
}

// run dispatches one request, registered for cancellation under key, and
// returns its response and HTTP status (0: 200). The era is decided by the
// request alone; closing the response stream (the request's context)
// cancels it, the only cancellation of the modern era.
func (h *httpHandler) run(ctx context.Context, srv *Server, key string, m *Message, hdr http.Header) ([]byte, int) {
	if m.Method != "tools/call" && m.Method != "subscriptions/listen" {
		return srv.serve(ctx, m, serverCancels, eraPerRequest, hdr)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	full := key + "\x00" + idKey(m.ID)
	rc := &runningCall{cancel: cancel}
	h.mu.Lock()
	h.running[full] = append(h.running[full], rc)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		list := h.running[full]
		for i, c := range list {
			if c == rc {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(h.running, full)
		} else {
			h.running[full] = list
		}
		h.mu.Unlock()
	}()
	return srv.serve(ctx, m, transportCancels, eraPerRequest, hdr)
}

func (h *httpHandler) cancel(key string, id json.RawMessage) {
	if id == nil {
		return
	}
	h.mu.Lock()
	list := append([]*runningCall(nil), h.running[key+"\x00"+idKey(id)]...)
	h.mu.Unlock()
	for _, c := range list {
		c.cancel(errCancelledByClient)
	}
}

func (h *httpHandler) log(msg string, args ...any) {
	if h.opts.Logger != nil {
		h.opts.Logger.Error(msg, args...)
	}
}

// decodeHTTPMessages decodes a body into messages the way the official
// SDK's HTTP transport validates it. status != 0 means reject.
func decodeHTTPMessages(body []byte) (msgs []*Message, status, code int, msg string) {
	const invalid = "Parse error: Invalid JSON-RPC message"
	const notJSON = "Parse error: Invalid JSON"
	if isBatch(body) {
		var elems []json.RawMessage
		if json.Unmarshal(body, &elems) != nil {
			if !jsonraw.Valid(body) {
				return nil, http.StatusBadRequest, CodeParseError, notJSON
			}
			return nil, http.StatusBadRequest, CodeParseError, invalid
		}
		if len(elems) > maxBatchSize {
			return nil, http.StatusBadRequest, CodeInvalidRequest,
				"Invalid Request: Batch must not exceed " + strconv.Itoa(maxBatchSize) + " messages"
		}
		inits := 0
		for _, e := range elems {
			m, err := DecodeMessage(e)
			if err != nil {
				return nil, http.StatusBadRequest, CodeParseError, invalid
			}
			if m.Method == "initialize" && m.IsRequest() {
				inits++
			}
			msgs = append(msgs, m)
		}
		if inits > 0 && len(msgs) > 1 {
			return nil, http.StatusBadRequest, CodeInvalidRequest, "Invalid Request: Only one initialization request is allowed"
		}
		return msgs, 0, 0, ""
	}
	m, err := DecodeMessage(body)
	if errors.Is(err, ErrParse) {
		return nil, http.StatusBadRequest, CodeParseError, notJSON
	}
	if err != nil {
		return nil, http.StatusBadRequest, CodeParseError, invalid
	}
	return []*Message{m}, 0, 0, ""
}

// bodyPool recycles request body buffers: decoding copies what it keeps,
// so a body is dead once decoded.
var bodyPool = sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, 4<<10)) }}

const maxPooledBody = 64 << 10

// readBody reads at most max bytes of the body into a pooled buffer, which
// the caller hands back with putBody once the body is decoded.
func readBody(r *http.Request, max int64) (buf *bytes.Buffer, tooLarge bool, err error) {
	if r.ContentLength > max {
		return nil, true, nil
	}
	buf = bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	if r.ContentLength > 0 && r.ContentLength <= max {
		buf.Grow(int(r.ContentLength) + 1)
	}
	n, err := buf.ReadFrom(io.LimitReader(r.Body, max+1))
	if n > max {
		putBody(buf)
		return nil, true, nil
	}
	return buf, false, err
}

func putBody(buf *bytes.Buffer) {
	if buf != nil && buf.Cap() <= maxPooledBody {
		bodyPool.Put(buf)
	}
}

// parseAccept reports whether the Accept header values admit JSON and SSE
// (a media range with q=0 admits nothing).
func parseAccept(values []string) (json, sse bool) {
	for _, v := range values {
		if v == "application/json, text/event-stream" { // what SDK clients send
			return true, true
		}
		for rest := v; rest != ""; {
			var part string
			part, rest, _ = strings.Cut(rest, ",")
			mt, params, _ := strings.Cut(part, ";")
			if acceptRefused(params) {
				continue
			}
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "application/json", "application/*":
				json = true
			case "text/event-stream", "text/*":
				sse = true
			case "*/*":
				json, sse = true, true
			}
		}
	}
	return json, sse
}

// acceptRefused reports whether media-range parameters carry q=0.
func acceptRefused(params string) bool {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(strings.TrimSpace(k), "q") {
			if q, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil && q <= 0 {
				return true
			}
		}
	}
	return false
}

func isJSONContentType(ct string) bool {
	if ct == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// rebinding is the DNS-rebinding check unless it is disabled.
func (h *httpHandler) rebinding(r *http.Request) string {
	if h.opts.DisableHostCheck {
		return ""
	}
	return hostcheck.Rebinding(r, h.allowed)
}
