package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/agentbe/agent-backend/internal/jsonraw"
	"github.com/agentbe/agent-backend/internal/metrics"
)

// Bounds of the audit log's buffering.
const (
	// auditFlushEvery is how long a record may wait before it is written.
	auditFlushEvery = time.Second
	// auditKick wakes the writer early once this much is pending.
	auditKick = 64 << 10
	// auditMaxPending is how much may wait for a writer that is stuck (a
	// full pipe, a hung disk); records beyond it are dropped and counted.
	auditMaxPending = 8 << 20
	// auditCloseWait bounds how long Close waits for the last write.
	auditCloseWait = 5 * time.Second
	// maxAuditField bounds a command, path or error message in a record.
	maxAuditField = 4096
)

// auditLog writes audit records, one JSON object per line, to an
// io.Writer. A request encodes its record and appends it to a chunk under
// a mutex, nothing more: one goroutine writes the chunks out, at least
// every auditFlushEvery and when Close is called, so that a slow or
// failing writer never blocks a request. A write error is logged at Error
// once (and again only after the log became writable and failed anew);
// the records it lost are counted in agentbe_audit_dropped_total.
type auditLog struct {
	w       io.Writer
	log     *slog.Logger
	written *metrics.Counter
	dropped *metrics.Counter

	mu      sync.Mutex
	pending [][]byte // chunks of whole lines, the last one being filled
	size    int      // bytes in pending
	free    [][]byte // empty chunks to reuse
	closed  bool

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// auditChunk is the size of the chunks records are gathered in: appending
// never moves what was gathered already.
const auditChunk = 64 << 10

func newAuditLog(w io.Writer, log *slog.Logger, m *serverMetrics) *auditLog {
	a := &auditLog{w: w, log: log, written: m.auditRecs, dropped: m.auditDrop,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go a.run()
	return a
}

// add queues one encoded record (a complete line).
func (a *auditLog) add(line []byte) {
	a.mu.Lock()
	if a.closed || a.size+len(line) > auditMaxPending {
		a.mu.Unlock()
		a.dropped.Inc()
		return
	}
	n := len(a.pending)
	if n == 0 || len(a.pending[n-1])+len(line) > cap(a.pending[n-1]) {
		var c []byte
		if k := len(a.free); k > 0 && len(line) <= auditChunk {
			c, a.free = a.free[k-1], a.free[:k-1]
		} else {
			c = make([]byte, 0, max(auditChunk, len(line)))
		}
		a.pending = append(a.pending, c)
		n++
	}
	a.pending[n-1] = append(a.pending[n-1], line...)
	a.size += len(line)
	kick := a.size >= auditKick
	a.mu.Unlock()
	if kick {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
}

func (a *auditLog) run() {
	defer close(a.done)
	t := time.NewTicker(auditFlushEvery)
	defer t.Stop()
	var out [][]byte
	failing := false
	for {
		stopping := false
		select {
		case <-a.kick:
		case <-t.C:
		case <-a.stop:
			stopping = true
		}
		a.mu.Lock()
		out, a.pending = a.pending, out[:0]
		a.size = 0
		a.mu.Unlock()
		for _, c := range out {
			lines := uint64(bytes.Count(c, []byte{'\n'}))
			if _, err := a.w.Write(c); err != nil {
				a.dropped.Add(lines)
				if !failing {
					failing = true
					a.log.Error("daemon: audit log write failed; records are dropped until it works again", "err", err)
				}
			} else {
				a.written.Add(lines)
				if failing {
					failing = false
					a.log.Info("daemon: audit log writable again")
				}
			}
		}
		a.mu.Lock()
		for i, c := range out {
			if cap(c) == auditChunk && len(a.free) < 16 {
				a.free = append(a.free, c[:0])
			}
			out[i] = nil
		}
		a.mu.Unlock()
		if stopping {
			return
		}
	}
}

// Close writes what is pending and stops the writer; later records are
// dropped.
func (a *auditLog) Close() {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	a.mu.Unlock()
	close(a.stop)
	select {
	case <-a.done:
	case <-time.After(auditCloseWait):
		// A writer stuck for good (a pipe no one reads) must not hang
		// the shutdown; its goroutine is left to the process's exit.
		a.log.Error("daemon: audit log writer stuck; shutting down without its last records")
	}
}

// auditRecord is one audit record being built; the fields every record
// has are set by Server.auditStart.
type auditRecord struct{ b []byte }

var recordPool = sync.Pool{New: func() any { return &auditRecord{b: make([]byte, 0, 512)} }}

// auditStart begins a record of op, done by the request ctx belongs to
// (when any), which started at start and took d: time, op, request_id,
// trace_id (when the request sent a traceparent), route, tenant, scope
// (scope overrides the request's when not nil), remote, ok and
// duration_ms. It returns nil when no audit log is configured or ctx is an
// internal operation's.
func (s *Server) auditStart(ctx context.Context, op string, start time.Time, d time.Duration, ok bool, scope *string) *auditRecord {
	return s.auditStartOn(ctx, numRoutes, op, start, d, ok, scope)
}

// auditStartOn is auditStart with the route rt instead of the request's
// (unless rt is numRoutes).
func (s *Server) auditStartOn(ctx context.Context, rt route, op string, start time.Time, d time.Duration, ok bool, scope *string) *auditRecord {
	if s.audit == nil || isInternal(ctx) {
		return nil
	}
	info := requestInfoFrom(ctx)
	r := recordPool.Get().(*auditRecord)
	b := r.b[:0]
	b = append(b, `{"time":"`...)
	b = start.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	b = append(b, `","op":`...)
	b = jsonraw.AppendString(b, op)
	sc := info.scopeName()
	if scope != nil {
		sc = *scope
	}
	if info != nil {
		b = append(b, `,"request_id":`...)
		b = jsonraw.AppendString(b, info.ID)
		if info.TraceID != "" {
			b = append(b, `,"trace_id":"`...)
			b = append(b, info.TraceID...)
			b = append(b, '"')
		}
		if rt == numRoutes {
			rt = info.Route
		}
		b = append(b, `,"route":"`...)
		b = append(b, rt.String()...)
		b = append(b, '"')
	}
	b = append(b, `,"tenant":`...)
	b = jsonraw.AppendString(b, info.tenantName())
	b = append(b, `,"scope":`...)
	b = jsonraw.AppendString(b, sc)
	if info != nil {
		b = append(b, `,"remote":`...)
		b = jsonraw.AppendString(b, info.Remote)
	}
	b = append(b, `,"ok":`...)
	b = strconv.AppendBool(b, ok)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, float64(d.Microseconds())/1000, 'f', -1, 64)
	r.b = b
	return r
}

// str adds a string field, cut to maxAuditField bytes.
func (r *auditRecord) str(k, v string) *auditRecord {
	if r == nil {
		return nil
	}
	if len(v) > maxAuditField {
		v = v[:maxAuditField] // AppendString turns a cut rune into U+FFFD
	}
	r.b = append(r.b, ',', '"')
	r.b = append(r.b, k...)
	r.b = append(r.b, '"', ':')
	r.b = jsonraw.AppendString(r.b, v)
	return r
}

// num adds an integer field.
func (r *auditRecord) num(k string, v int64) *auditRecord {
	if r == nil {
		return nil
	}
	r.b = append(r.b, ',', '"')
	r.b = append(r.b, k...)
	r.b = append(r.b, '"', ':')
	r.b = strconv.AppendInt(r.b, v, 10)
	return r
}

// flag adds a boolean field.
func (r *auditRecord) flag(k string, v bool) *auditRecord {
	if r == nil {
		return nil
	}
	r.b = append(r.b, ',', '"')
	r.b = append(r.b, k...)
	r.b = append(r.b, '"', ':')
	r.b = strconv.AppendBool(r.b, v)
	return r
}

// end completes the record and queues it.
func (s *Server) auditEnd(r *auditRecord) {
	if r == nil {
		return
	}
	r.b = append(r.b, '}', '\n')
	s.audit.add(r.b)
	if cap(r.b) <= 16<<10 {
		recordPool.Put(r)
	}
}

type internalKey struct{}

// internal marks ctx as the daemon's own work (readiness probes, the
// directory of a scope made for a request): its operations are neither
// audited nor counted as commands.
func internal(ctx context.Context) context.Context {
	return context.WithValue(ctx, internalKey{}, true)
}

func isInternal(ctx context.Context) bool { return ctx.Value(internalKey{}) != nil }
