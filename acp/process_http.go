package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/sse"
)

// ProcessConfig configures /v1/processes.
type ProcessConfig struct {
	// Limits are the daemon's limits; a client may lower those of its own
	// space (POST /v1/processes/config), never raise them. Zero fields take
	// DefaultProcessLimits'.
	Limits ProcessLimits
	// Key names the process space of a request: requests of one key see
	// and touch only that key's processes. Nil keys by the request's
	// backend (its scope's directory).
	Key func(r *http.Request) string
	// MaxConcurrent, when set, lowers Limits.MaxConcurrentProcesses for a
	// request's space (a tenant's own cap); 0 leaves it.
	MaxConcurrent func(r *http.Request) int
}

// ProcessLimits are the /v1/processes limits, as GET /v1/processes/config
// reports them (sandbox-agent's names and defaults). Zero fields take the
// defaults.
type ProcessLimits struct {
	MaxConcurrentProcesses  int   `json:"maxConcurrentProcesses"`
	DefaultRunTimeoutMs     int64 `json:"defaultRunTimeoutMs"`
	MaxRunTimeoutMs         int64 `json:"maxRunTimeoutMs"`
	MaxOutputBytes          int   `json:"maxOutputBytes"`
	MaxLogBytesPerProcess   int   `json:"maxLogBytesPerProcess"`
	MaxInputBytesPerRequest int   `json:"maxInputBytesPerRequest"`
}

// DefaultProcessLimits are sandbox-agent 0.4.2's defaults, except the
// output kept per process: 1 MiB instead of 10 MiB, since a scope may run
// 64 processes and the daemon serves many scopes.
var DefaultProcessLimits = ProcessLimits{
	MaxConcurrentProcesses:  64,
	DefaultRunTimeoutMs:     30000,
	MaxRunTimeoutMs:         300000,
	MaxOutputBytes:          1 << 20,
	MaxLogBytesPerProcess:   1 << 20,
	MaxInputBytesPerRequest: 64 << 10,
}

// withDefaults fills zero fields from d.
func (l ProcessLimits) withDefaults(d ProcessLimits) ProcessLimits {
	if l.MaxConcurrentProcesses <= 0 {
		l.MaxConcurrentProcesses = d.MaxConcurrentProcesses
	}
	if l.DefaultRunTimeoutMs <= 0 {
		l.DefaultRunTimeoutMs = d.DefaultRunTimeoutMs
	}
	if l.MaxRunTimeoutMs <= 0 {
		l.MaxRunTimeoutMs = d.MaxRunTimeoutMs
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = d.MaxOutputBytes
	}
	if l.MaxLogBytesPerProcess <= 0 {
		l.MaxLogBytesPerProcess = d.MaxLogBytesPerProcess
	}
	if l.MaxInputBytesPerRequest <= 0 {
		l.MaxInputBytesPerRequest = d.MaxInputBytesPerRequest
	}
	return l
}

// capAt lowers every field of l above max to max's.
func (l ProcessLimits) capAt(max ProcessLimits) ProcessLimits {
	l.MaxConcurrentProcesses = min(l.MaxConcurrentProcesses, max.MaxConcurrentProcesses)
	l.MaxRunTimeoutMs = min(l.MaxRunTimeoutMs, max.MaxRunTimeoutMs)
	l.DefaultRunTimeoutMs = min(l.DefaultRunTimeoutMs, l.MaxRunTimeoutMs)
	l.MaxOutputBytes = min(l.MaxOutputBytes, max.MaxOutputBytes)
	l.MaxLogBytesPerProcess = min(l.MaxLogBytesPerProcess, max.MaxLogBytesPerProcess)
	l.MaxInputBytesPerRequest = min(l.MaxInputBytesPerRequest, max.MaxInputBytesPerRequest)
	return l
}

// procSpaces holds the processes of every key (scope, or tenant); a
// request sees and touches only its own key's.
type procSpaces struct {
	mu     sync.Mutex
	spaces map[string]*procSpace
}

// procSpace is one key's processes and its limits.
type procSpace struct {
	mu      sync.Mutex
	next    uint64
	procs   map[string]*procEntry
	limits  ProcessLimits
	pending int // slots held by starts and runs not (yet) in procs
}

// procEntry is a process as /v1/processes shows it.
type procEntry struct {
	id, cwd     string
	num         uint64
	p           *agentbe.Process
	command     string
	args        []string
	tty         bool
	interactive bool
	created     time.Time
}

func (h *Handler) processLimits() ProcessLimits {
	return h.cfg.Processes.Limits.withDefaults(DefaultProcessLimits)
}

// space returns the request's process space, made on first use.
func (h *Handler) space(r *http.Request, b agentbe.Backend) *procSpace {
	key := b.RootDir()
	if h.cfg.Processes.Key != nil {
		key = h.cfg.Processes.Key(r)
	}
	h.procs.mu.Lock()
	defer h.procs.mu.Unlock()
	if h.procs.spaces == nil {
		h.procs.spaces = map[string]*procSpace{}
	}
	sp := h.procs.spaces[key]
	if sp == nil {
		sp = &procSpace{procs: map[string]*procEntry{}, limits: h.processLimits()}
		h.procs.spaces[key] = sp
	}
	return sp
}

func (sp *procSpace) get(id string) *procEntry {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.procs[id]
}

func (sp *procSpace) list() []*procEntry {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	out := make([]*procEntry, 0, len(sp.procs))
	for _, e := range sp.procs {
		out = append(out, e)
	}
	return out
}

// processRoutes registers /v1/processes.
func (h *Handler) processRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /v1/processes", h.procList)
	m.HandleFunc("POST /v1/processes", h.procStart)
	m.HandleFunc("POST /v1/processes/run", h.procRun)
	m.HandleFunc("GET /v1/processes/config", h.procConfigGet)
	m.HandleFunc("POST /v1/processes/config", h.procConfigSet)
	m.HandleFunc("GET /v1/processes/{id}", h.withProc(h.procGet))
	m.HandleFunc("DELETE /v1/processes/{id}", h.withProc(h.procDelete))
	m.HandleFunc("GET /v1/processes/{id}/logs", h.withProc(h.procLogs))
	m.HandleFunc("POST /v1/processes/{id}/input", h.withProc(h.procInput))
	m.HandleFunc("POST /v1/processes/{id}/stop", h.withProc(h.procSignal(agentbe.SIGTERM)))
	m.HandleFunc("POST /v1/processes/{id}/kill", h.withProc(h.procSignal(agentbe.SIGKILL)))
	m.HandleFunc("POST /v1/processes/{id}/terminal/resize", h.withProc(h.procResize))
	m.HandleFunc("GET /v1/processes/{id}/terminal/ws", h.withProc(h.procTerminal))
}

// processInfo is sandbox-agent's ProcessInfo.
type processInfo struct {
	ID          string   `json:"id"`
	Command     string   `json:"command"`
	Args        []string `json:"args"`
	Cwd         string   `json:"cwd,omitempty"`
	TTY         bool     `json:"tty"`
	Interactive bool     `json:"interactive"`
	Owner       string   `json:"owner"`
	Status      string   `json:"status"`
	PID         int      `json:"pid,omitempty"`
	ExitCode    *int     `json:"exitCode,omitempty"`
	CreatedAtMs int64    `json:"createdAtMs"`
	ExitedAtMs  int64    `json:"exitedAtMs,omitempty"`
}

func (e *procEntry) info(ctx context.Context) processInfo {
	in, _ := e.p.Info(ctx)
	out := processInfo{ID: e.id, Command: e.command, Args: e.args, Cwd: e.cwd, TTY: e.tty,
		Interactive: e.interactive, Owner: "user", Status: "running", CreatedAtMs: e.created.UnixMilli()}
	if out.Args == nil {
		out.Args = []string{}
	}
	if in.Running {
		out.PID = in.PID
	} else {
		out.Status = "exited"
		out.ExitedAtMs = in.ExitedAt.UnixMilli()
		if in.ExitCode >= 0 {
			code := in.ExitCode
			out.ExitCode = &code
		}
	}
	return out
}

func (e *procEntry) running(ctx context.Context) bool {
	in, err := e.p.Info(ctx)
	return err == nil && in.Running
}

// runner is the request's backend as a process runner (or answers 501).
func (h *Handler) runner(w http.ResponseWriter, r *http.Request) (agentbe.Backend, agentbe.ProcessRunner, func(), bool) {
	b, release, ok := h.backend(w, r)
	if !ok {
		return nil, nil, nil, false
	}
	pr, isRunner := b.(agentbe.ProcessRunner)
	if !isRunner || !agentbe.Executes(b) {
		release()
		writeProblem(w, problem(http.StatusNotImplemented, "not_implemented", "Not Implemented",
			"this workspace does not run processes"))
		return nil, nil, nil, false
	}
	return b, pr, release, true
}

// withProc resolves {id} in the request's space (404 otherwise).
func (h *Handler) withProc(fn func(w http.ResponseWriter, r *http.Request, sp *procSpace, e *procEntry)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _, release, ok := h.runner(w, r)
		if !ok {
			return
		}
		defer release()
		sp := h.space(r, b)
		id := r.PathValue("id")
		e := sp.get(id)
		if e == nil {
			writeProblem(w, processNotFound(id))
			return
		}
		fn(w, r, sp, e)
	}
}

func processNotFound(id string) *problemError {
	p := notFound("process " + id)
	p.Extra = map[string]any{"details": map[string]string{"id": id, "resource": "process"}}
	return p
}

// decodeBody decodes a JSON body of at most max bytes into v.
func decodeBody(w http.ResponseWriter, r *http.Request, max int64, v any) bool {
	if !isJSON(r.Header.Get("Content-Type")) {
		writeProblem(w, unsupportedMedia("Expected request with `Content-Type: application/json`"))
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		writeProblem(w, badRequest("cannot read body"))
		return false
	}
	if int64(len(body)) > max {
		writeProblem(w, tooLarge("request body too large"))
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeProblem(w, badRequest("invalid JSON body: "+err.Error()))
		return false
	}
	return true
}

// maxProcessBody bounds the JSON bodies of /v1/processes (input has its own
// limit).
const maxProcessBody = 1 << 20

type startRequest struct {
	Command     *string           `json:"command"`
	Args        []string          `json:"args"`
	Cwd         string            `json:"cwd"`
	Env         map[string]string `json:"env"`
	TTY         bool              `json:"tty"`
	Interactive bool              `json:"interactive"`
}

func (q *startRequest) check() *problemError {
	if q.Command == nil {
		return problem(http.StatusUnprocessableEntity, "invalid_request", "Unprocessable Entity", "missing field `command`")
	}
	if *q.Command == "" {
		return badRequest("command must not be empty")
	}
	return nil
}

// startProblem maps a StartProcess (or Exec) error to a problem.
func startProblem(err error, cwd string) *problemError {
	switch {
	case errors.Is(err, agentbe.ErrTooManyProcesses):
		return conflict("max concurrent process limit reached")
	case errors.Is(err, agentbe.ErrPathEscape):
		return problem(http.StatusForbidden, "path_escape", "Path Escape", "path escapes the workspace: "+cwd)
	case errors.Is(err, agentbe.ErrDangerous):
		return withDetails(problem(http.StatusForbidden, "forbidden", "Forbidden", "command refused: "+err.Error()),
			err.Error())
	case errors.Is(err, agentbe.ErrDestroyed):
		return problem(http.StatusServiceUnavailable, "unavailable", "Service Unavailable", "workspace closed")
	case errors.Is(err, fs.ErrNotExist):
		return streamError(http.StatusBadGateway, "failed to spawn process: No such file or directory (os error 2)")
	}
	var ae *agentbe.Error
	if errors.As(err, &ae) && ae.Code == agentbe.CodeEmptyCommand {
		return badRequest("command must not be empty")
	}
	return streamError(http.StatusBadGateway, "failed to spawn process")
}

func (h *Handler) procStart(w http.ResponseWriter, r *http.Request) {
	var q startRequest
	if !decodeBody(w, r, maxProcessBody, &q) {
		return
	}
	_, pr, sp, done, ok := h.procSlot(w, r, &q, false)
	if !ok {
		return
	}
	defer done()
	limits := sp.currentLimits()
	args := q.Args
	if args == nil {
		args = []string{}
	}
	p, err := pr.StartProcess(r.Context(), *q.Command, agentbe.ProcessOptions{
		Args: args, Dir: q.Cwd, Env: q.Env, TTY: q.TTY, OutputBytes: limits.MaxLogBytesPerProcess,
	})
	if err != nil {
		writeProblem(w, startProblem(err, q.Cwd))
		return
	}
	e := &procEntry{p: p, command: *q.Command, args: args, cwd: q.Cwd, tty: q.TTY,
		interactive: q.Interactive, created: time.Now()}
	sp.mu.Lock()
	sp.next++
	e.num = sp.next
	e.id = "proc_" + strconv.FormatUint(sp.next, 10)
	sp.procs[e.id] = e
	sp.trimLocked(r.Context(), pr)
	sp.mu.Unlock()
	writeJSON(w, http.StatusOK, e.info(r.Context()))
}

// procSlot is the start of POST /v1/processes and /v1/processes/run: it
// checks q, finds the request's runner and process space, and holds one
// of the space's concurrent-process slots until done is called (a started
// process is counted twice for a moment rather than not at all). A start
// is refused (409) at the space's concurrency limit or the request's
// tenant's lower cap; a run, which sandbox-agent does not count, only at
// the tenant's cap, so that no tenant runs more at once than its cap by
// running rather than starting.
func (h *Handler) procSlot(w http.ResponseWriter, r *http.Request, q *startRequest, run bool) (b agentbe.Backend, pr agentbe.ProcessRunner, sp *procSpace, done func(), ok bool) {
	if p := q.check(); p != nil {
		writeProblem(w, p)
		return nil, nil, nil, nil, false
	}
	b, pr, release, ok := h.runner(w, r)
	if !ok {
		return nil, nil, nil, nil, false
	}
	sp = h.space(r, b)
	limit := sp.currentLimits().MaxConcurrentProcesses
	if run {
		limit = math.MaxInt
	}
	if m := h.cfg.Processes.MaxConcurrent; m != nil {
		if n := m(r); n > 0 && n < limit {
			limit = n
		}
	}
	sp.mu.Lock()
	running := sp.pending
	for _, e := range sp.procs {
		if e.running(r.Context()) {
			running++
		}
	}
	if running >= limit {
		sp.mu.Unlock()
		release()
		writeProblem(w, conflict("max concurrent process limit reached ("+strconv.Itoa(limit)+")"))
		return nil, nil, nil, nil, false
	}
	sp.pending++
	sp.mu.Unlock()
	return b, pr, sp, func() {
		sp.mu.Lock()
		sp.pending--
		sp.mu.Unlock()
		release()
	}, true
}

// currentLimits is the space's limits.
func (sp *procSpace) currentLimits() ProcessLimits {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.limits
}

// trimLocked forgets the oldest exited processes beyond the space's
// concurrency limit, so a long-lived space stays bounded.
func (sp *procSpace) trimLocked(ctx context.Context, pr agentbe.ProcessRunner) {
	var exited []*procEntry
	for _, e := range sp.procs {
		if !e.running(ctx) {
			exited = append(exited, e)
		}
	}
	if len(exited) <= sp.limits.MaxConcurrentProcesses {
		return
	}
	sort.Slice(exited, func(i, j int) bool { return exited[i].num < exited[j].num })
	for _, e := range exited[:len(exited)-sp.limits.MaxConcurrentProcesses] {
		delete(sp.procs, e.id)
		_ = pr.RemoveProcess(ctx, e.p.ID())
	}
}

func (h *Handler) procList(w http.ResponseWriter, r *http.Request) {
	b, _, release, ok := h.runner(w, r)
	if !ok {
		return
	}
	defer release()
	es := h.space(r, b).list()
	// sandbox-agent sorts by id as strings.
	sort.Slice(es, func(i, j int) bool { return es[i].id < es[j].id })
	out := make([]processInfo, 0, len(es))
	for _, e := range es {
		out = append(out, e.info(r.Context()))
	}
	writeJSON(w, http.StatusOK, map[string]any{"processes": out})
}

func (h *Handler) procGet(w http.ResponseWriter, r *http.Request, _ *procSpace, e *procEntry) {
	writeJSON(w, http.StatusOK, e.info(r.Context()))
}

func (h *Handler) procDelete(w http.ResponseWriter, r *http.Request, sp *procSpace, e *procEntry) {
	if e.running(r.Context()) {
		writeProblem(w, conflict("process is still running; stop or kill it before delete"))
		return
	}
	sp.mu.Lock()
	delete(sp.procs, e.id)
	sp.mu.Unlock()
	// The library keeps exited processes too (bounded); forget it there.
	_, pr, release, ok := h.runner(w, r)
	if !ok {
		return
	}
	_ = pr.RemoveProcess(r.Context(), e.p.ID())
	release()
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) procConfigGet(w http.ResponseWriter, r *http.Request) {
	b, _, release, ok := h.runner(w, r)
	if !ok {
		return
	}
	defer release()
	sp := h.space(r, b)
	sp.mu.Lock()
	l := sp.limits
	sp.mu.Unlock()
	writeJSON(w, http.StatusOK, l)
}

// procConfigSet sets the space's limits. Unlike sandbox-agent, whose
// limits are the whole server's, they are the caller's space's, and never
// above the daemon's own (a higher value is lowered to it).
func (h *Handler) procConfigSet(w http.ResponseWriter, r *http.Request) {
	var q struct {
		MaxConcurrentProcesses  *int   `json:"maxConcurrentProcesses"`
		DefaultRunTimeoutMs     *int64 `json:"defaultRunTimeoutMs"`
		MaxRunTimeoutMs         *int64 `json:"maxRunTimeoutMs"`
		MaxOutputBytes          *int   `json:"maxOutputBytes"`
		MaxLogBytesPerProcess   *int   `json:"maxLogBytesPerProcess"`
		MaxInputBytesPerRequest *int   `json:"maxInputBytesPerRequest"`
	}
	if !decodeBody(w, r, maxProcessBody, &q) {
		return
	}
	if q.MaxConcurrentProcesses == nil || q.DefaultRunTimeoutMs == nil || q.MaxRunTimeoutMs == nil ||
		q.MaxOutputBytes == nil || q.MaxLogBytesPerProcess == nil || q.MaxInputBytesPerRequest == nil {
		writeProblem(w, problem(http.StatusUnprocessableEntity, "invalid_request", "Unprocessable Entity",
			"every field of the process config is required"))
		return
	}
	l := ProcessLimits{*q.MaxConcurrentProcesses, *q.DefaultRunTimeoutMs, *q.MaxRunTimeoutMs,
		*q.MaxOutputBytes, *q.MaxLogBytesPerProcess, *q.MaxInputBytesPerRequest}
	if l.MaxConcurrentProcesses <= 0 || l.DefaultRunTimeoutMs <= 0 || l.MaxRunTimeoutMs <= 0 ||
		l.MaxOutputBytes <= 0 || l.MaxLogBytesPerProcess <= 0 || l.MaxInputBytesPerRequest <= 0 {
		writeProblem(w, badRequest("process config values must be positive"))
		return
	}
	b, _, release, ok := h.runner(w, r)
	if !ok {
		return
	}
	defer release()
	sp := h.space(r, b)
	l = l.capAt(h.processLimits())
	sp.mu.Lock()
	sp.limits = l
	sp.mu.Unlock()
	writeJSON(w, http.StatusOK, l)
}

// logEntry is sandbox-agent's ProcessLogEntry.
type logEntry struct {
	Sequence    uint64 `json:"sequence"`
	Stream      string `json:"stream"`
	TimestampMs int64  `json:"timestampMs"`
	Data        string `json:"data"`
	Encoding    string `json:"encoding"`
}

func toLogEntry(e agentbe.OutputEntry) logEntry {
	return logEntry{Sequence: e.Seq, Stream: string(e.Stream), TimestampMs: e.Time.UnixMilli(),
		Data: base64.StdEncoding.EncodeToString(e.Data), Encoding: "base64"}
}

func (h *Handler) procLogs(w http.ResponseWriter, r *http.Request, _ *procSpace, e *procEntry) {
	q := r.URL.Query()
	stream := "combined"
	if v := q.Get("stream"); v != "" {
		switch v {
		case "stdout", "stderr", "combined", "pty":
			stream = v
		default:
			writeProblem(w, badRequest("stream must be one of: stdout, stderr, combined, pty"))
			return
		}
	}
	var since, tail uint64
	var err error
	if v := q.Get("since"); v != "" {
		if since, err = strconv.ParseUint(v, 10, 64); err != nil {
			writeProblem(w, badRequest("since must be a non-negative integer"))
			return
		}
	}
	hasTail := q.Get("tail") != ""
	if hasTail {
		if tail, err = strconv.ParseUint(q.Get("tail"), 10, 64); err != nil {
			writeProblem(w, badRequest("tail must be a non-negative integer"))
			return
		}
	}
	follow := false
	if v := q.Get("follow"); v != "" {
		if follow, err = strconv.ParseBool(v); err != nil {
			writeProblem(w, badRequest("follow must be true or false"))
			return
		}
	}
	keep := func(x agentbe.OutputEntry) bool {
		return stream == "combined" || string(x.Stream) == stream
	}
	es, err := e.p.Output(r.Context(), since)
	if err != nil {
		writeProblem(w, streamError(http.StatusBadGateway, "cannot read the process output"))
		return
	}
	kept := make([]logEntry, 0, len(es))
	for _, x := range es {
		if keep(x) {
			kept = append(kept, toLogEntry(x))
		}
	}
	if hasTail && uint64(len(kept)) > tail {
		kept = kept[uint64(len(kept))-tail:]
	}
	if !follow {
		writeJSON(w, http.StatusOK, map[string]any{"processId": e.id, "stream": stream, "entries": kept})
		return
	}
	h.followLogs(w, r, e, kept, since, es, keep)
}

// followLogs streams the entries (first those already read, then live
// ones) as server-sent events; the stream stays open after the process
// exited, with keep-alives, until the client closes it.
func (h *Handler) followLogs(w http.ResponseWriter, r *http.Request, e *procEntry, first []logEntry, since uint64,
	read []agentbe.OutputEntry, keep func(agentbe.OutputEntry) bool) {
	stream, err := sse.Start(w, streamWriteTimeout)
	if err != nil {
		return
	}
	var buf []byte
	for _, le := range first {
		data, _ := json.Marshal(le)
		buf = appendSSE(buf, "log", le.Sequence, data)
	}
	if len(read) > 0 {
		since = read[len(read)-1].Seq
	}
	if len(buf) > 0 && stream.Write(buf) != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	kaDone := make(chan struct{})
	go func() {
		defer close(kaDone)
		keepAlive := time.NewTicker(orDefault(h.cfg.KeepAlive, DefaultKeepAlive))
		defer keepAlive.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-keepAlive.C:
				if stream.Write([]byte(":\n\n")) != nil {
					cancel()
					return
				}
			}
		}
	}()
	err = e.p.Follow(ctx, since, func(x agentbe.OutputEntry) error {
		if !keep(x) {
			return nil
		}
		le := toLogEntry(x)
		data, _ := json.Marshal(le)
		buf = appendSSE(buf[:0], "log", le.Sequence, data)
		return stream.Write(buf)
	})
	if err != nil {
		cancel() // the client is gone, or took nothing for streamWriteTimeout
	}
	<-ctx.Done()
	<-kaDone // the keep-alive has stopped writing before the handler returns
}

// streamWriteTimeout bounds each write of an event stream (a followed log,
// an agent's messages): a client that takes nothing, not even a
// keep-alive, for that long is gone or stuck, and its stream ends, giving
// back its request (it resumes with ?since= or Last-Event-ID). A variable
// for tests.
var streamWriteTimeout = sse.DefaultWriteTimeout

// decodeInput decodes input data in one of sandbox-agent's encodings
// (base64 by default).
func decodeInput(data, encoding string) ([]byte, *problemError) {
	switch encoding {
	case "", "base64":
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, badRequest("invalid base64 input")
		}
		return b, nil
	case "utf8", "text":
		return []byte(data), nil
	}
	return nil, badRequest("encoding must be one of: base64, utf8, text")
}

func (h *Handler) procInput(w http.ResponseWriter, r *http.Request, sp *procSpace, e *procEntry) {
	sp.mu.Lock()
	max := sp.limits.MaxInputBytesPerRequest
	sp.mu.Unlock()
	var q struct {
		Data     *string `json:"data"`
		Encoding string  `json:"encoding"`
	}
	// base64 grows data by 4/3; the JSON around it is small.
	if !decodeBody(w, r, int64(max)*4/3+4096, &q) {
		return
	}
	if q.Data == nil {
		writeProblem(w, problem(http.StatusUnprocessableEntity, "invalid_request", "Unprocessable Entity", "missing field `data`"))
		return
	}
	data, p := decodeInput(*q.Data, q.Encoding)
	if p != nil {
		writeProblem(w, p)
		return
	}
	if len(data) > max {
		writeProblem(w, tooLarge("input exceeds maxInputBytesPerRequest ("+strconv.Itoa(max)+")"))
		return
	}
	n, err := e.p.WriteContext(r.Context(), data)
	if err != nil {
		writeProblem(w, conflict("process is not running"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"bytesWritten": n})
}

// maxWait bounds ?waitMs of stop and kill.
const maxWait = 5 * time.Minute

func (h *Handler) procSignal(sig agentbe.Signal) func(w http.ResponseWriter, r *http.Request, sp *procSpace, e *procEntry) {
	return func(w http.ResponseWriter, r *http.Request, _ *procSpace, e *procEntry) {
		var wait time.Duration
		if v := r.URL.Query().Get("waitMs"); v != "" {
			ms, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				writeProblem(w, badRequest("waitMs must be a non-negative integer"))
				return
			}
			wait = min(time.Duration(ms)*time.Millisecond, maxWait)
		}
		if err := e.p.Signal(r.Context(), sig); err != nil {
			writeProblem(w, streamError(http.StatusBadGateway, "cannot signal the process"))
			return
		}
		if wait > 0 {
			ctx, cancel := context.WithTimeout(r.Context(), wait)
			_, _ = e.p.Wait(ctx)
			cancel()
		}
		writeJSON(w, http.StatusOK, e.info(r.Context()))
	}
}

func (h *Handler) procResize(w http.ResponseWriter, r *http.Request, _ *procSpace, e *procEntry) {
	var q struct {
		Cols *int `json:"cols"`
		Rows *int `json:"rows"`
	}
	if !decodeBody(w, r, maxProcessBody, &q) {
		return
	}
	if q.Cols == nil || q.Rows == nil {
		writeProblem(w, problem(http.StatusUnprocessableEntity, "invalid_request", "Unprocessable Entity", "missing field `cols` or `rows`"))
		return
	}
	if *q.Cols < 1 || *q.Rows < 1 || *q.Cols > 0xffff || *q.Rows > 0xffff {
		writeProblem(w, badRequest("cols and rows must be between 1 and 65535"))
		return
	}
	if err := e.p.Resize(r.Context(), *q.Cols, *q.Rows); err != nil {
		if errors.Is(err, agentbe.ErrNotTTY) {
			writeProblem(w, conflict("process is not running in tty mode"))
			return
		}
		writeProblem(w, conflict("process is not running"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"cols": *q.Cols, "rows": *q.Rows})
}

// procRun runs a command to its end (POST /v1/processes/run) through the
// backend's Exec, output capped at maxOutputBytes per stream.
func (h *Handler) procRun(w http.ResponseWriter, r *http.Request) {
	var q struct {
		startRequest
		TimeoutMs      *int64 `json:"timeoutMs"`
		MaxOutputBytes *int   `json:"maxOutputBytes"`
	}
	if !decodeBody(w, r, maxProcessBody, &q) {
		return
	}
	b, _, sp, done, ok := h.procSlot(w, r, &q.startRequest, true)
	if !ok {
		return
	}
	defer done()
	limits := sp.currentLimits()
	timeout := time.Duration(limits.DefaultRunTimeoutMs) * time.Millisecond
	if q.TimeoutMs != nil && *q.TimeoutMs > 0 {
		timeout = time.Duration(min(*q.TimeoutMs, limits.MaxRunTimeoutMs)) * time.Millisecond
	}
	maxOut := limits.MaxOutputBytes
	if q.MaxOutputBytes != nil && *q.MaxOutputBytes > 0 {
		maxOut = min(*q.MaxOutputBytes, limits.MaxOutputBytes)
	}
	line := shellQuote(*q.Command)
	for _, a := range q.Args {
		line += " " + shellQuote(a)
	}
	stdout, stderr := &capWriter{max: maxOut}, &capWriter{max: maxOut}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	start := time.Now()
	_, err := b.Exec(ctx, "exec "+line, agentbe.ExecOptions{Dir: q.Cwd, Env: q.Env, Stdout: stdout, Stderr: stderr})
	dur := time.Since(start)
	var code *int
	timedOut := false
	var xe *agentbe.ExitError
	switch {
	case err == nil:
		zero := 0
		code = &zero
	case errors.As(err, &xe):
		c := xe.ExitCode
		code = &c
	case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
		timedOut = true
	default:
		writeProblem(w, startProblem(err, q.Cwd))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"exitCode": code, "timedOut": timedOut,
		"stdout": string(stdout.buf), "stderr": string(stderr.buf),
		"stdoutTruncated": stdout.cut, "stderrTruncated": stderr.cut,
		"durationMs": dur.Milliseconds(),
	})
}

// capWriter keeps the first max bytes written to it.
type capWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
	cut bool
}

func (c *capWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	room := c.max - len(c.buf)
	if len(p) > room {
		c.cut = true
		p = p[:max(room, 0)]
	}
	c.buf = append(c.buf, p...)
	return n, nil
}

// shellQuote quotes s as one word of a POSIX shell.
func shellQuote(s string) string {
	safe := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' ||
			c == '.' || c == '/' || c == '=' || c == ':' || c == ',' || c == '+' || c == '@' || c == '%') {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, `'\''`...)
		} else {
			out = append(out, s[i])
		}
	}
	return string(append(out, '\''))
}
