package daemon

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/agentbe/agent-backend/internal/sse"
)

// statusWriter records the status and size of a response for the access
// log; it keeps Flush (SSE) and Hijack (WebSocket) working.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	// ownDeadline: the handler sets its write deadlines itself (an event
	// stream does, internal/sse), and bound leaves them alone.
	ownDeadline bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write writes p a chunk at a time, each bounded by responseWriteTimeout
// (see bound).
func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	written := 0
	for {
		chunk := p[written:]
		if len(chunk) > responseChunk {
			chunk = chunk[:responseChunk]
		}
		w.bound()
		n, err := w.ResponseWriter.Write(chunk)
		written += n
		w.bytes += int64(n)
		if err != nil || written == len(p) {
			return written, err
		}
	}
}

// ReadFrom keeps the response's own ReadFrom (sendfile from a file that
// gives its descriptor) reachable through the access log's wrapper. It
// copies responseCopyChunk at a time, each bounded as Write's chunks are
// (a LimitedReader of a file still goes by sendfile).
func (w *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	rf, ok := w.ResponseWriter.(io.ReaderFrom)
	if !ok {
		rf = readerFrom{w.ResponseWriter}
	}
	if lr, ok := r.(*io.LimitedReader); ok && lr.N <= responseCopyChunk {
		// One chunk already (io.CopyN, acp's sendWhole): as it is.
		w.bound()
		n, err := rf.ReadFrom(r)
		w.bytes += n
		return n, err
	}
	var total int64
	for {
		w.bound()
		n, err := rf.ReadFrom(io.LimitReader(r, responseCopyChunk))
		total += n
		w.bytes += n
		if err != nil || n < responseCopyChunk {
			return total, err
		}
	}
}

// readerFrom copies into a writer without a ReadFrom of its own.
type readerFrom struct{ w io.Writer }

func (r readerFrom) ReadFrom(src io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{r.w}, src)
}

// bound gives the next write to the connection responseWriteTimeout: a
// client that takes nothing of a response for that long is gone or stuck,
// and the handler's write fails instead of holding its goroutine, its
// buffers and its tenant's share for as long as the connection stays
// open. Each chunk gets the bound anew, so a slow client that keeps
// reading is served to the end.
func (w *statusWriter) bound() {
	if w.ownDeadline {
		return
	}
	if d, ok := w.ResponseWriter.(interface{ SetWriteDeadline(time.Time) error }); ok {
		_ = d.SetWriteDeadline(time.Now().Add(responseWriteTimeout))
	}
}

// SetWriteDeadline passes a handler's own write deadline on (through an
// http.ResponseController); from then on the handler's deadlines stand.
func (w *statusWriter) SetWriteDeadline(t time.Time) error {
	w.ownDeadline = true
	return http.NewResponseController(w.ResponseWriter).SetWriteDeadline(t)
}

// responseWriteTimeout bounds each chunk of a response the daemon writes;
// event streams bound each of their writes the same way (internal/sse). A
// variable for tests.
var responseWriteTimeout = sse.DefaultWriteTimeout

// responseChunk is how much of a response one bounded Write carries, and
// responseCopyChunk one bounded ReadFrom: a client must take that much
// within responseWriteTimeout (about 9 and 70 KB/s). The copy's chunk is
// acp's sendWhole step, which sendfile needs that large (1 MiB steps
// measured 685-939 MiB/s against 1048-1553 for 8 MiB).
const (
	responseChunk     = 1 << 20
	responseCopyChunk = 8 << 20
)

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("daemon: response cannot be hijacked")
	}
	c, rw, err := h.Hijack()
	if err == nil {
		w.status = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// accessLog wraps h with panic recovery and one slog line per request:
// method, path (never the query, which may hold ?token=), status, bytes,
// duration, the client address and the tenant (when a tenant's token made
// the request). Headers are never logged. A request
// answered below 400 is logged at Debug, any other at Info: formatting a
// line for every request was 6% of the daemon's CPU serving
// read_text_file (perf), so the routine ones cost nothing unless asked for.
// A request whose handler panicked is logged (with the stack) and counted
// by pl, answered 500 if nothing was sent yet, and its access line is at
// Error whatever its status (a panic after the answer was sent would
// otherwise hide behind a 200).
func accessLog(pl *panicLog, h http.Handler) http.Handler { return observeRequests(pl, nil, h) }

// observeRequests is accessLog that also gives every request its
// requestInfo (its X-Request-Id, set on the response at once, and the
// trace id of its traceparent) in its context, and, when m is not nil,
// counts it in the HTTP metrics.
func observeRequests(pl *panicLog, m *serverMetrics, h http.Handler) http.Handler {
	log := pl.log
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{ID: requestID(r.Header.Get("X-Request-Id")), Remote: r.RemoteAddr, Route: routeOf(r.URL.Path)}
		if tp := r.Header.Values("Traceparent"); len(tp) == 1 {
			info.TraceID = parseTraceparent(tp[0])
		}
		info.idHeader[0] = info.ID
		w.Header()["X-Request-Id"] = info.idHeader[:]
		r = r.WithContext(withRequestInfo(r.Context(), info))
		var body *countingBody
		if m != nil {
			if r.Body != nil && r.Body != http.NoBody {
				body = &info.body
				body.ReadCloser = r.Body
				r.Body = body
			}
			m.inFlight.Inc()
		}
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			panicked := false
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					if m != nil {
						m.inFlight.Dec()
					}
					panic(v)
				}
				panicked = true
				pl.recoveredContext(r.Context(), "HTTP "+r.Method+" "+r.URL.Path, v)
				if sw.status == 0 {
					writeJSON(sw, http.StatusInternalServerError, errorBody{"Internal Server Error", "The request could not be completed"})
				}
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			dur := time.Since(start)
			if m != nil {
				m.inFlight.Dec()
				var in int64
				if body != nil {
					in = body.n
				}
				m.request(info.Route, info.tenantName(), status, dur, in, sw.bytes)
			}
			level := slog.LevelDebug
			switch {
			case panicked:
				level = slog.LevelError
			case status >= 400:
				level = slog.LevelInfo
			}
			if !log.Enabled(r.Context(), level) {
				return
			}
			attrs := []slog.Attr{slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.Int("status", status), slog.Int64("bytes", sw.bytes),
				slog.Duration("dur", dur), slog.String("remote", r.RemoteAddr)}
			if t := info.tenantName(); t != "" {
				attrs = append(attrs, slog.String("tenant", t))
			}
			if panicked {
				attrs = append(attrs, slog.Bool("panic", true))
			}
			log.LogAttrs(r.Context(), level, "http", attrs...)
		}()
		h.ServeHTTP(sw, r)
	})
}

// limiter admits at most cap(sem) requests at once; the rest get, at once
// rather than queueing without bound, 503 with Retry-After and a body
// whose message starts "daemon full" (a busy daemon, not a dead one), and
// are logged.
type limiter struct {
	sem chan struct{}
	log *slog.Logger
}

func newLimiter(n int, log *slog.Logger) *limiter {
	return &limiter{sem: make(chan struct{}, n), log: log}
}

func (l *limiter) wrap(h http.Handler, what string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case l.sem <- struct{}{}:
		default:
			msg := "daemon full: " + strconv.Itoa(cap(l.sem)) + " concurrent " + what + " already; retry later"
			logRefused(l.log, r, msg)
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusServiceUnavailable, errorBody{"Service Unavailable", msg})
			return
		}
		defer func() { <-l.sem }()
		h.ServeHTTP(w, r)
	})
}

// errorBody is the {"error","message"} JSON body of the daemon's errors.
type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}
