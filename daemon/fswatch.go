package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/sse"
)

// Defaults of the watch route's bounds (Config.MaxWatchStreams,
// MaxWatchesPerTenant, MaxWatchesPerScope).
const (
	DefaultMaxWatchStreams     = 64
	DefaultMaxWatchesPerTenant = 8192
	DefaultMaxWatchesPerScope  = 4096
)

// watchKeepalive is how often an idle watch stream gets an SSE comment,
// so that proxies keep it open and a dead client is noticed.
const watchKeepalive = 15 * time.Second

// watchWriteTimeout bounds each write of a watch stream: a client that
// takes nothing (not even a keep-alive) for that long is gone or stuck,
// and its stream ends, giving back its slot and its share of requests
// (it resumes from its last event with Last-Event-ID). A variable for
// tests.
var watchWriteTimeout = 2 * time.Minute

// watchState is the daemon's watch bookkeeping: the budgets of watched
// directories, one per tenant with one per scope below it, kept for as
// long as they count watches so that a reconnecting client finds its feed
// again (a feed is shared only by watchers of one budget); and the
// streams open. The zero value is ready.
type watchState struct {
	mu       sync.Mutex
	budgets  map[watchKey]*agentbe.WatchBudget
	tenants  map[string]*agentbe.WatchBudget
	streams  int
	shutdown chan struct{} // closed by closeAll
}

type watchKey struct{ tenant, scope string }

// budget returns the budget of scope (a normalized scope path, "" for the
// workspace) of tenant ("" until tenants exist), made on first use.
func (s *Server) watchBudget(tenant, scope string) *agentbe.WatchBudget {
	ws := &s.watch
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.budgets == nil {
		ws.budgets, ws.tenants = map[watchKey]*agentbe.WatchBudget{}, map[string]*agentbe.WatchBudget{}
	}
	k := watchKey{tenant, scope}
	if b := ws.budgets[k]; b != nil {
		return b
	}
	if len(ws.budgets) >= 4096 { // forget the budgets nothing counts against
		for key, b := range ws.budgets {
			if b.Used() == 0 {
				delete(ws.budgets, key)
			}
		}
	}
	t := ws.tenants[tenant]
	if t == nil {
		t = agentbe.NewWatchBudget(orDefault(s.cfg.MaxWatchesPerTenant, DefaultMaxWatchesPerTenant), nil)
		ws.tenants[tenant] = t
	}
	b := agentbe.NewWatchBudget(orDefault(s.cfg.MaxWatchesPerScope, DefaultMaxWatchesPerScope), t)
	ws.budgets[k] = b
	return b
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// openStream counts a stream, or reports the daemon full of them; the
// channel is closed when the daemon shuts down.
func (ws *watchState) openStream(max int) (<-chan struct{}, bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.shutdown == nil {
		ws.shutdown = make(chan struct{})
	}
	if ws.streams >= max {
		return nil, false
	}
	ws.streams++
	return ws.shutdown, true
}

func (ws *watchState) closeStream() {
	ws.mu.Lock()
	ws.streams--
	ws.mu.Unlock()
}

// closeAll ends every open stream (at shutdown; the streams would
// otherwise hold the HTTP server's graceful shutdown until its timeout).
func (ws *watchState) closeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.shutdown == nil {
		ws.shutdown = make(chan struct{})
	}
	select {
	case <-ws.shutdown:
	default:
		close(ws.shutdown)
	}
}

// watchTenant is the tenant a request's watches count against: its
// tenant's name, "" for the operator.
func (s *Server) watchTenant(r *http.Request) string {
	if p, ok := s.requestPrincipal(r); ok && p.tenant != nil {
		return "tenant\x00" + p.tenant.name
	}
	return ""
}

// fsWatch answers GET /v1/fs/watch?path=DIR (default: the root) with a
// stream of server-sent events: first "ready" (its id is the cursor the
// stream starts at), then one "change" per event (data: the JSON of an
// agentbe.ChangeEvent; id: "<feed>:<seq>"), and "ended" (data: {"note"})
// when the feed stops. A client that reconnects with Last-Event-ID (or
// ?cursor=) resumes after that event: the events it missed come first
// while the daemon still keeps them, otherwise a "rescan" change says to
// list the tree again. Token, root and scope rules are those of /v1.
func (s *Server) fsWatch(w http.ResponseWriter, r *http.Request) {
	shutdown, ok := s.watch.openStream(orDefault(s.cfg.MaxWatchStreams, DefaultMaxWatchStreams))
	if !ok {
		w.Header().Set("Retry-After", "1")
		v1Problem(w, http.StatusServiceUnavailable, "Too Many Watches", "daemon full: too many watch streams", "", nil)
		return
	}
	defer s.watch.closeStream()
	b, scope, release, ok := s.v1Backend(w, r)
	if !ok {
		return
	}
	defer release()
	p := r.URL.Query().Get("path")
	if p == "" {
		p = "."
	}
	cursor := r.Header.Get("Last-Event-ID")
	if c := r.URL.Query().Get("cursor"); c != "" {
		cursor = c
	}
	watcher, err := agentbe.Watch(r.Context(), b, p, agentbe.WatchOptions{Cursor: cursor, Budget: s.watchBudget(s.watchTenant(r), scope)})
	if err != nil {
		status, title, known := fsErrStatus(err, "Watch failed",
			errStatus{agentbe.ErrWatchLimit, http.StatusTooManyRequests, "Watch limit"},
			errStatus{agentbe.ErrWatchNotSupported, http.StatusNotImplemented, "Not supported"},
			errStatus{agentbe.ErrInvalidConfig, http.StatusBadRequest, "Invalid Request"})
		if !known && agentbe.CodeOf(err) != "" {
			status, title = http.StatusBadRequest, "Invalid Request"
		}
		code := string(agentbe.CodeOf(err))
		if errors.Is(err, agentbe.ErrWatchLimit) {
			code = "WATCH_LIMIT"
		}
		v1Problem(w, status, title, err.Error(), code, nil)
		return
	}
	defer watcher.Close()

	stream, err := sse.Start(w, watchWriteTimeout)
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-shutdown:
			cancel()
		case <-ctx.Done():
		}
	}()

	ready, _ := json.Marshal(map[string]any{"feed": watcher.ID(), "cursor": watcher.Cursor()})
	if stream.Write(sse.AppendEvent([]byte("retry: 1000\n"), "ready", watcher.Cursor(), ready)) != nil {
		return
	}
	for {
		nctx, ncancel := context.WithTimeout(ctx, watchKeepalive)
		ev, err := watcher.Next(nctx)
		ncancel()
		switch {
		case err == nil:
			data, _ := json.Marshal(ev)
			if stream.Event("change", agentbe.FormatWatchCursor(watcher.ID(), ev.Seq), data) != nil {
				return
			}
		case ctx.Err() != nil:
			return
		case errors.Is(err, context.DeadlineExceeded):
			if stream.Write([]byte(": keepalive\n\n")) != nil {
				return
			}
		default:
			note, _ := json.Marshal(map[string]string{"note": err.Error()})
			stream.Event("ended", "", note)
			return
		}
	}
}
