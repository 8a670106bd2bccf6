package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/agentbe/agent-backend/internal/jsonraw"
)

// ServerOptions configures a Server. The zero value is usable.
type ServerOptions struct {
	// Instructions, when set, is sent in the initialize result.
	Instructions string
	// Logger receives tool panics (with stack) and other server-side
	// problems. nil discards them.
	Logger *slog.Logger
	// OnPanic, when set, is called with each panic of a tool handler that
	// the server recovered, from the deferred function that recovered it
	// (so runtime/debug.Stack still shows where it happened), after
	// Logger's line; e.g. to log it one's own way and count it.
	OnPanic func(tool string, v any)
	// CallTimeout, when positive, is the deadline of every tools/call: the
	// tool's context is cancelled once it elapses (the file tools check it
	// in every loop and stop) and the call is answered with an error
	// result. Zero leaves calls bounded only by the request's context and
	// notifications/cancelled. A call answered with a task is bounded by
	// TaskOptions.MaxRuntime instead.
	CallTimeout time.Duration
	// MaxMessageBytes bounds every message the Server sends (one response,
	// or the array answering a batch); zero means DefaultMaxMessageBytes,
	// and a value below 64 KiB is raised to 64 KiB (MessageLimit). Tools
	// keep their results within it (agentbe's file tools fail a read that
	// would not fit with an error that says how to read less; exec cuts its
	// output), and a response that would still exceed it is replaced, never
	// sent: a tools/call result by an error result, anything else by a
	// JSON-RPC internal error.
	MaxMessageBytes int
	// Tasks, when set, keeps the tasks this Server starts (the tasks
	// extension, TasksExtension): a tools/call of a LongRunning tool from
	// a request declaring the extension that runs longer than
	// TaskOptions.After is answered with a task, and tasks/get,
	// tasks/update and tasks/cancel are served. nil: no tasks (those
	// methods are -32601). One store serves all the Servers of a daemon,
	// so a task outlives the HTTP request that started it.
	Tasks *TaskStore
	// TaskOwner is the key this Server's tasks are kept under in Tasks: a
	// Server sees, polls and cancels only its owner's tasks. A daemon
	// serving several tenants or scopes from one store sets it per request
	// (e.g. to the tenant and scope); "" is an owner like any other.
	TaskOwner string
}

// Server is a transport-free MCP dispatcher: it turns one decoded JSON-RPC
// message into the bytes of its response. It serves initialize, ping,
// tools/list and tools/call, and honours notifications/cancelled for
// requests it is running. It keeps no per-client session state, so one
// Server may serve many connections, and a fresh one per HTTP request is
// cheap: one allocation, the tools' definitions being shared in a ToolSet.
//
// Its tools and options are fixed by NewServer; it is safe for concurrent
// use.
type Server struct {
	info Implementation
	opts ServerOptions
	set  *ToolSet
	call ToolHandler

	mu       sync.Mutex
	inflight map[string]*inflightCall
	// tasksRunning counts the tasks this Server started that are still
	// running; idle is what runs once they are all done (releaseWhenIdle).
	tasksRunning int
	idle         func()
}

// cancelOwner says who cancels a running tools/call when the client sends
// notifications/cancelled for it.
type cancelOwner uint8

const (
	// serverCancels: the Server keeps the call in its own table, where a
	// notifications/cancelled handled by the same Server finds it (Handle,
	// HandleBytes, and so the in-process client and stdio batches).
	serverCancels cancelOwner = iota
	// transportCancels: the transport registered the call before reading
	// on and cancels the call's context itself (stdio in the Server's
	// table, before the next line is read; Streamable HTTP in its
	// process-wide table, since the cancellation comes in another POST).
	transportCancels
)

type inflightCall struct {
	cancel context.CancelCauseFunc
}

// errCancelledByClient is the cancel cause of a request the client
// cancelled with notifications/cancelled.
var errCancelledByClient = errors.New("mcp: request cancelled by client")

// emptyToolSet is what a Server made with a nil ToolSet offers.
var emptyToolSet = &ToolSet{}

// NewServer returns a Server that announces itself as info and offers the
// tools of tools, every tools/call of one of them served by h. tools is
// shared, not copied: a daemon makes its ToolSet once and a Server per
// request, binding h to that request's state. A nil tools offers no tools;
// h may be nil only then.
func NewServer(info Implementation, opts ServerOptions, tools *ToolSet, h ToolHandler) *Server {
	if tools == nil {
		tools = emptyToolSet
	}
	if h == nil && tools.Len() > 0 {
		panic("mcp: NewServer with tools and a nil handler")
	}
	return &Server{info: info, opts: opts, set: tools, call: h}
}

// Tools returns the registered tool definitions in tools/list order.
func (s *Server) Tools() []Tool { return s.set.Tools() }

// HandleBytes decodes one message or a batch from data, dispatches it and
// returns the encoded response: an object for a single request, an array
// for a batch containing requests (at most 100, as the HTTP transport
// accepts; a larger batch gets one -32600 error), nil when there is nothing to answer
// (notifications and responses only). Undecodable input is answered with a
// -32700 or -32600 error with id null, as JSON-RPC 2.0 prescribes. The
// requests of a batch run concurrently; their responses keep the order of
// the requests.
func (s *Server) HandleBytes(ctx context.Context, data []byte) []byte {
	if isBatch(data) {
		var elems []json.RawMessage
		if err := json.Unmarshal(data, &elems); err != nil {
			return appendError(nil, nil, CodeParseError, "Parse error", nil)
		}
		if len(elems) == 0 {
			return appendError(nil, nil, CodeInvalidRequest, "Invalid Request", nil)
		}
		if len(elems) > maxBatchSize {
			// Each request of a batch runs in its own goroutine: a bound
			// keeps one line from starting millions of them.
			return appendError(nil, nil, CodeInvalidRequest,
				"Invalid Request: Batch must not exceed "+strconv.Itoa(maxBatchSize)+" messages", nil)
		}
		resps := make([][]byte, len(elems))
		ids := make([]json.RawMessage, len(elems))
		var wg sync.WaitGroup
		for i, e := range elems {
			m, err := DecodeMessage(e)
			if err != nil || !m.IsRequest() {
				resps[i] = s.handleDecoded(ctx, m, err)
				continue
			}
			ids[i] = m.ID
			wg.Add(1)
			go func() {
				defer wg.Done()
				resps[i] = s.Handle(ctx, m)
			}()
		}
		wg.Wait()
		s.fitBatch(resps, ids)
		var out []byte
		for _, r := range resps {
			if r == nil {
				continue
			}
			if out == nil {
				out = append(make([]byte, 0, 256), '[')
			} else {
				out = append(out, ',')
			}
			out = append(out, r...)
		}
		if out == nil {
			return nil
		}
		return append(out, ']')
	}
	m, err := DecodeMessage(data)
	return s.handleDecoded(ctx, m, err)
}

// fitBatch keeps the array answering a batch within the message limit:
// while it is over, the largest response is replaced by a JSON-RPC error
// saying so (each response alone is already within the limit).
func (s *Server) fitBatch(resps [][]byte, ids []json.RawMessage) {
	limit := s.opts.MessageLimit()
	total := 1 // '[' and ']', with the commas counted one per response
	for _, r := range resps {
		if r != nil {
			total += len(r) + 1
		}
	}
	for total > limit {
		big := -1
		for i, r := range resps {
			if r != nil && (big < 0 || len(r) > len(resps[big])) {
				big = i
			}
		}
		id := ids[big]
		if len(id) > limit/(2*len(resps)) {
			id = nil
		}
		repl := appendError(nil, id, CodeInternalError, "Internal error: the responses to this batch together are over the limit of "+
			strconv.Itoa(limit)+" bytes for one MCP message; send the requests one by one", nil)
		if len(repl) >= len(resps[big]) {
			return // nothing left to shrink (cannot happen within a 64 KiB limit)
		}
		s.logf("mcp: batch response too large", "bytes", total, "limit", limit)
		total -= len(resps[big]) - len(repl)
		resps[big] = repl
	}
}

func (s *Server) handleDecoded(ctx context.Context, m *Message, err error) []byte {
	if err != nil {
		if errors.Is(err, ErrParse) {
			return appendError(nil, nil, CodeParseError, "Parse error", nil)
		}
		var id json.RawMessage
		if m != nil {
			id = m.ID
		}
		return appendError(nil, id, CodeInvalidRequest, "Invalid Request", nil)
	}
	return s.Handle(ctx, m)
}

// Handle dispatches one message (normally from DecodeMessage; a hand-made
// one must carry a valid JSON ID) and returns its encoded response,
// or nil for notifications, responses and requests the client cancelled
// (MCP says a cancelled request gets no response). ctx bounds the request:
// when it is done the running tool's context is cancelled too. While a
// tools/call runs, a notifications/cancelled naming its id, passed to
// Handle of the same Server, cancels it.
func (s *Server) Handle(ctx context.Context, m *Message) []byte {
	return s.handle(ctx, m, serverCancels)
}

// handle is Handle with the cancellation of a tools/call owned by owner,
// the era decided by the request alone.
func (s *Server) handle(ctx context.Context, m *Message, owner cancelOwner) []byte {
	resp, _ := s.serve(ctx, m, owner, eraPerRequest, nil)
	return resp
}

// serve answers one message on a connection whose era is ce (stdio has
// decided it with an earlier message; eraPerRequest: this message decides)
// and returns the response with its HTTP status (0: the usual one). hdr are
// the HTTP request's headers, nil on other transports.
func (s *Server) serve(ctx context.Context, m *Message, owner cancelOwner, ce connEra, hdr http.Header) ([]byte, int) {
	if m == nil || m.IsResponse() {
		return nil, 0 // we never send requests, so responses are stray
	}
	if m.IsNotification() {
		if m.Method == "notifications/cancelled" {
			s.cancelFromNotification(m.Params)
		}
		return nil, 0
	}
	rq := &request{Message: m, owner: owner, hdr: hdr, trace: traceOf(m)}
	if resp := s.decide(rq, ce); resp != nil {
		return resp, rq.status
	}
	if rq.info != nil {
		ctx = context.WithValue(ctx, requestInfoKey{}, rq.info)
	} else if rq.trace != "" {
		ctx = context.WithValue(ctx, traceKey{}, rq.trace)
	}
	return s.fit(m.ID, s.dispatch(ctx, rq)), rq.status
}

// decide sets the era of rq on a connection in state ce and, for a modern
// request, validates its _meta and HTTP headers; it returns the error
// response of a request that fails that, else nil.
func (s *Server) decide(rq *request, ce connEra) []byte {
	claim, claimed := metaClaim(rq.Message)
	switch {
	case ce == eraPinnedLegacy:
		return nil // _meta is just metadata in the legacy era
	case claimed:
		rq.era = eraModern
	case ce == eraPinnedModern:
		if rq.Method == "initialize" {
			v := ""
			if paramsObject(rq.Message) {
				jsonraw.ScanObject(rq.Params, func(k, val []byte) {
					if string(k) == "protocolVersion" {
						v, _ = jsonraw.String(val)
					}
				})
			}
			return s.unsupportedVersion(rq, v)
		}
		rq.era = eraModern
		return s.reject(rq, http.StatusBadRequest, CodeInvalidParams,
			"Invalid _meta envelope for protocol revision "+ProtocolVersion2026+": "+MetaProtocolVersion+": missing",
			envelopeError(MetaProtocolVersion, "missing"))
	default:
		if hv := headerValue(rq.hdr, "Mcp-Protocol-Version"); hv != "" && isModernVersion(hv) {
			// A modern header without the envelope the body must carry.
			rq.era = eraModern
			return s.reject(rq, http.StatusBadRequest, CodeInvalidParams,
				"Invalid _meta envelope for protocol revision "+hv+": "+MetaProtocolVersion+": missing",
				envelopeError(MetaProtocolVersion, "missing"))
		}
		return nil
	}
	if rq.hdr != nil {
		// The version header must repeat the claim, whatever the claim.
		if hv, ok := rq.hdr["Mcp-Protocol-Version"]; ok && len(hv) == 1 {
			if v, isString := jsonraw.String(claim); isString {
				if d, ok := decodeHeaderValue(hv[0]); ok && d != v {
					return s.headerMismatch(rq, "Mcp-Protocol-Version", d, v)
				}
			}
		}
	}
	if resp := s.parseModern(rq, claim); resp != nil {
		return resp
	}
	if rq.hdr != nil {
		return s.checkHeaders(rq)
	}
	return nil
}

// fit returns resp, or when it is over the message limit a JSON-RPC error
// in its place (with id null when even that would not fit: a request whose
// id alone is that large).
func (s *Server) fit(id json.RawMessage, resp []byte) []byte {
	limit := s.opts.MessageLimit()
	if len(resp) <= limit {
		return resp
	}
	s.logf("mcp: response too large", "bytes", len(resp), "limit", limit)
	msg := "Internal error: the response is " + strconv.Itoa(len(resp)) + " bytes, over the limit of " +
		strconv.Itoa(limit) + " bytes for one MCP message"
	releaseResponse(resp)
	if len(id) > limit/2 {
		id = nil
	}
	return appendError(nil, id, CodeInternalError, msg, nil)
}

// dispatch answers a request, one case per method; each method serves
// both eras (rq.modern()) or answers the other one as methodNotFound does.
func (s *Server) dispatch(ctx context.Context, rq *request) []byte {
	switch rq.Method {
	case "initialize":
		return s.initialize(rq)
	case "ping":
		return s.ping(rq)
	case "server/discover":
		return s.discover(rq)
	case "tools/list":
		return s.listTools(rq)
	case "tools/call":
		return s.callTool(ctx, rq)
	case "tasks/get":
		return s.capStatus(rq, s.tasksGet(rq.Message))
	case "tasks/update":
		return s.capStatus(rq, s.tasksUpdate(rq.Message))
	case "tasks/cancel":
		return s.capStatus(rq, s.tasksCancel(rq.Message))
	case "subscriptions/listen":
		return s.listen(ctx, rq)
	}
	return s.methodNotFound(rq)
}

// methodNotFound answers a method the server does not serve in the
// request's era: -32601, with HTTP status 404 in the modern era.
func (s *Server) methodNotFound(rq *request) []byte {
	if rq.modern() {
		rq.status = http.StatusNotFound
	}
	return appendError(nil, rq.ID, CodeMethodNotFound, "Method not found", nil)
}

func (s *Server) ping(rq *request) []byte {
	if rq.modern() {
		return s.methodNotFound(rq) // removed in the modern era
	}
	return appendResponse(nil, rq.ID, json.RawMessage("{}"))
}

func (s *Server) listTools(rq *request) []byte {
	if rq.modern() {
		list := s.set.modernListResult()
		b := append(make([]byte, 0, len(list)+160), `{"jsonrpc":"2.0","id":`...)
		b = append(b, rq.ID...)
		b = append(b, `,"result":`...)
		b = append(b, list...)
		b = s.appendModernTrailer(b)
		return append(b, "}}"...)
	}
	list := s.set.listResult()
	return appendResponse(make([]byte, 0, len(list)+64), rq.ID, list)
}

// paramsObject reports whether m.Params is a JSON object the scanner may
// walk (messages not made by DecodeMessage are validated here).
func paramsObject(m *Message) bool {
	p := bytes.TrimSpace(m.Params)
	if len(p) == 0 || p[0] != '{' {
		return false
	}
	return m.validated || jsonraw.Valid(p)
}

func (s *Server) initialize(rq *request) []byte {
	if rq.modern() {
		return s.methodNotFound(rq) // no handshake in the modern era
	}
	m := rq.Message
	var version string
	hasVersion := false
	if paramsObject(m) {
		jsonraw.ScanObject(m.Params, func(k, v []byte) {
			if string(k) == "protocolVersion" {
				version, hasVersion = jsonraw.String(v)
			}
		})
	}
	if !hasVersion {
		return appendError(nil, m.ID, CodeInvalidParams, "Invalid params: protocolVersion must be a string", nil)
	}
	v := version
	if !isLegacyVersion(v) {
		v = LatestLegacyProtocolVersion
	}
	b := append(make([]byte, 0, 192), `{"jsonrpc":"2.0","id":`...)
	b = append(b, m.ID...)
	b = append(b, `,"result":{"protocolVersion":`...)
	b = jsonraw.AppendString(b, v)
	b = append(b, `,"capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":`...)
	b = jsonraw.AppendString(b, s.info.Name)
	if s.info.Title != "" {
		b = append(b, `,"title":`...)
		b = jsonraw.AppendString(b, s.info.Title)
	}
	b = append(b, `,"version":`...)
	b = jsonraw.AppendString(b, s.info.Version)
	b = append(b, '}')
	if s.opts.Instructions != "" {
		b = append(b, `,"instructions":`...)
		b = jsonraw.AppendString(b, s.opts.Instructions)
	}
	return append(b, `}}`...)
}

func (s *Server) callTool(ctx context.Context, rq *request) []byte {
	m, owner := rq.Message, rq.owner
	var (
		name    []byte
		hasName bool
		args    []byte
	)
	if paramsObject(m) {
		jsonraw.ScanObject(m.Params, func(k, v []byte) {
			switch string(k) {
			case "name":
				name, hasName = jsonraw.Unquote(v)
			case "arguments":
				args = v
			}
		})
	}
	if !hasName {
		return appendError(nil, m.ID, CodeInvalidParams, "Invalid params: name must be a string", nil)
	}
	if len(args) > 0 {
		if bytes.Equal(args, jsonNull) {
			args = nil
		} else if args[0] != '{' {
			return appendError(nil, m.ID, CodeInvalidParams, "Invalid params: arguments must be an object", nil)
		}
	}
	var res *CallToolResult
	i := s.set.lookupBytes(name)
	if i < 0 && rq.modern() {
		// The modern official server makes an unknown tool a protocol
		// error (answered in-band, HTTP 200).
		return appendError(nil, m.ID, CodeInvalidParams, "Tool "+string(name)+" not found", nil)
	}
	if i < 0 {
		res = ErrorResult("MCP error -32602: Tool " + string(name) + " not found")
	} else {
		if s.taskEligible(i, m) {
			return s.modernize(rq, s.callAsTask(ctx, m, i, name, args))
		}
		prog := s.progressFor(ctx, m)
		if owner == transportCancels {
			res = s.runTool(ctx, rq, i, args, callExtras{progress: prog})
			prog.stop()
		} else {
			callCtx, cancel := context.WithCancelCause(ctx)
			key := s.track(m.ID, cancel)
			res = s.runTool(callCtx, rq, i, args, callExtras{progress: prog})
			prog.stop()
			s.untrack(key)
			cancel(nil)
			if context.Cause(callCtx) == errCancelledByClient {
				return nil
			}
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	b := s.appendToolResponse(m.ID, name, res, 0)
	if rq.modern() {
		b = s.appendModernTrailer(b[:len(b)-2]) // inside the result object
		b = append(b, "}}"...)
	}
	return b
}

// appendToolResponse encodes the response carrying res, the result of
// tool name, kept within the message limit less reserve bytes (a result
// that would not fit is replaced by an error result saying so). With a
// nil id it returns the result object alone.
func (s *Server) appendToolResponse(id json.RawMessage, name []byte, res *CallToolResult, reserve int) []byte {
	head := func(b []byte) []byte {
		if id == nil {
			return b
		}
		b = append(b, `{"jsonrpc":"2.0","id":`...)
		b = append(b, id...)
		return append(b, `,"result":`...)
	}
	tail := func(b []byte) []byte {
		if id == nil {
			return b
		}
		return append(b, '}')
	}
	b := head(responseBuffer(resultSizeHint(res) + len(id) + 1))
	b, err := appendCallToolResult(b, res)
	if err != nil {
		s.logf("mcp: encoding result of tool", "tool", string(name), "err", err)
		b = head(b[:0])
		b, _ = appendCallToolResult(b, ErrorResult("Internal error: result of tool "+string(name)+" cannot be encoded: "+err.Error()))
	}
	b = tail(b)
	if limit := s.opts.MessageLimit() - reserve; len(b) > limit {
		s.logf("mcp: result of tool too large", "tool", string(name), "bytes", len(b), "limit", limit)
		n := len(b)
		releaseResponse(b)
		b = head(responseBuffer(256 + len(id)))
		b, _ = appendCallToolResult(b, ErrorResult("Result too large: the result of tool "+string(name)+" is "+
			strconv.Itoa(n)+" bytes encoded, over the limit of "+strconv.Itoa(limit)+
			" bytes for one MCP message; ask for less (a smaller part of the file, fewer entries, less output)"))
		b = tail(b)
	}
	return b
}

// callExtras are what a tools/call offers its handler beyond the
// arguments.
type callExtras struct {
	progress *progressSink // nil: the request asked for no progress
	output   io.Writer     // nil: nobody watches the output
	task     bool          // run as a task: TaskOptions.MaxRuntime bounds it, not CallTimeout
}

// runTool calls the handler of tool i, turning errors and panics into
// error results.
func (s *Server) runTool(ctx context.Context, rq *request, i int, args json.RawMessage, x callExtras) (res *CallToolResult) {
	defer func() {
		if v := recover(); v != nil {
			name := s.set.tools[i].Name
			s.logReq(rq, "mcp: tool panicked", "tool", name, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if s.opts.OnPanic != nil {
				s.opts.OnPanic(name, v)
			}
			res = ErrorResult("Internal error: tool " + name + " panicked")
		}
	}()
	if s.opts.CallTimeout > 0 && !x.task {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.CallTimeout)
		defer cancel()
	}
	call := ToolCall{Index: i, Name: s.set.tools[i].Name, Arguments: args, Output: x.output}
	if x.progress != nil {
		call.Progress = x.progress.report
	}
	r, err := s.call(ctx, call)
	if err != nil {
		return ErrorResult(err.Error())
	}
	if r == nil {
		return &CallToolResult{Content: []Content{}}
	}
	if r.Content == nil {
		r.Content = []Content{}
	}
	return r
}

func (s *Server) logf(msg string, args ...any) {
	if s.opts.Logger != nil {
		s.opts.Logger.Error(msg, args...)
	}
}

// capStatus gives a modern -32021 (a client capability the request did
// not declare) its HTTP status, 400.
func (s *Server) capStatus(rq *request, b []byte) []byte {
	if rq.modern() {
		if m, err := DecodeMessage(b); err == nil && m.Error != nil && m.Error.Code == CodeMissingClientCapability {
			rq.status = http.StatusBadRequest
		}
	}
	return b
}

// modernize gives a result answering a modern request the members every
// modern result carries, when it lacks them (a task's result carries its
// own resultType and is left as it is).
func (s *Server) modernize(rq *request, b []byte) []byte {
	if !rq.modern() || len(b) < 2 {
		return b
	}
	m, err := DecodeMessage(b)
	if err != nil || m.Result == nil || resultType(m.Result) != "" || !bytes.HasSuffix(b, []byte("}}")) {
		return b
	}
	b = s.appendModernTrailer(b[:len(b)-2])
	return append(b, "}}"...)
}

// logReq logs msg for one request, with its traceparent when it carried
// one.
func (s *Server) logReq(rq *request, msg string, args ...any) {
	if rq != nil && rq.trace != "" {
		args = append(args, "traceparent", rq.trace)
	}
	s.logf(msg, args...)
}

func idKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }

func (s *Server) track(id json.RawMessage, cancel context.CancelCauseFunc) string {
	key := idKey(id)
	s.mu.Lock()
	if s.inflight == nil {
		s.inflight = make(map[string]*inflightCall)
	}
	// A duplicate id replaces the older entry: JSON-RPC ids must be unique
	// among a client's pending requests, so the newest is the one meant.
	s.inflight[key] = &inflightCall{cancel: cancel}
	s.mu.Unlock()
	return key
}

func (s *Server) untrack(key string) {
	s.mu.Lock()
	delete(s.inflight, key)
	s.mu.Unlock()
}

type cancelledParams struct {
	RequestID json.RawMessage `json:"requestId"`
	Reason    string          `json:"reason"`
}

// CancelledRequestID returns the requestId of a notifications/cancelled
// params object, or nil.
func CancelledRequestID(params json.RawMessage) json.RawMessage {
	var p cancelledParams
	if len(params) == 0 || json.Unmarshal(params, &p) != nil {
		return nil
	}
	return p.RequestID
}

func (s *Server) cancelFromNotification(params json.RawMessage) {
	id := CancelledRequestID(params)
	if id == nil {
		return
	}
	s.mu.Lock()
	c := s.inflight[idKey(id)]
	s.mu.Unlock()
	if c != nil {
		c.cancel(errCancelledByClient)
	}
}

// InvalidArgumentsResult is the error result the official server gives for
// arguments that fail the tool's input schema:
// "MCP error -32602: Input validation error: Invalid arguments for tool
// NAME: DETAIL".
func InvalidArgumentsResult(tool, detail string) *CallToolResult {
	return ErrorResult("MCP error -32602: Input validation error: Invalid arguments for tool " + tool + ": " + detail)
}

// resultSizeHint estimates the encoded size of a result, so the response
// buffer is allocated once (escaping may still grow it).
func resultSizeHint(r *CallToolResult) int {
	n := 128
	for i := range r.Content {
		c := &r.Content[i]
		n += len(c.Text) + len(c.Data) + len(c.MimeType) + 48
		if c.Resource != nil {
			n += len(c.Resource.URI) + len(c.Resource.Text) + len(c.Resource.Blob) + 64
		}
	}
	if m, ok := r.StructuredContent.(map[string]string); ok {
		for k, v := range m {
			n += len(k) + len(v) + 8
		}
	}
	return n + n/16
}
