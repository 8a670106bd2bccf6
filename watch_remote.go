package agentbe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// remoteWatchKeep is how many received events a Remote's Watcher keeps
// for Since.
const remoteWatchKeep = 4096

// v1URL is the URL of the daemon's route p (beginning with "/v1/"), on
// the host and port of its MCP endpoint (the daemon serves both).
func (r *Remote) v1URL(p string, q url.Values) string {
	u := strings.TrimSuffix(r.mcpURL(), "/mcp") + p
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// watch is Watch for a Remote: the daemon's GET /v1/fs/watch, read as
// server-sent events, reconnected with Last-Event-ID after a loss.
func (r *Remote) watch(ctx context.Context, p string, opts WatchOptions) (*Watcher, error) {
	if err := r.core.alive("watch", p); err != nil {
		return nil, err
	}
	if opts.Cursor != "" {
		if _, _, err := ParseWatchCursor(opts.Cursor); err != nil {
			return nil, &Error{Code: CodeInvalidConfiguration, Op: "watch", Path: p, Backend: KindRemote, Err: err}
		}
	}
	rel, err := wspath.Resolve(r.rootDir, p)
	if err != nil {
		return nil, &Error{Code: CodePathEscape, Op: "watch", Path: p, Backend: KindRemote, Err: err}
	}
	w := &remoteWatch{r: r, p: p, rel: rel, last: opts.Cursor, events: make(chan remoteItem, 64),
		done: make(chan struct{}), stopped: make(chan struct{}), ready: make(chan struct{})}
	// opts.Budget does not apply: the daemon decides the budget of the
	// watches it runs.
	body, err := w.connect(ctx)
	if err != nil {
		return nil, err
	}
	w.untrack = r.core.life.track(closerFunc(w.close))
	go w.run(body)
	select {
	case <-w.ready:
	case <-w.stopped:
	case <-ctx.Done():
		w.close()
		return nil, ctx.Err()
	}
	return &Watcher{src: w}, nil
}

// remoteWatch is a Watcher on the daemon's watch route.
type remoteWatch struct {
	r       *Remote
	p, rel  string
	untrack func()

	events  chan remoteItem
	done    chan struct{} // closed by close
	stopped chan struct{} // closed when run returns
	once    sync.Once
	// ready is closed when the first stream said where it starts.
	ready     chan struct{}
	readyOnce sync.Once

	mu   sync.Mutex
	last string // Last-Event-ID: the cursor after the last event received
	body io.ReadCloser
	err  error         // why run stopped
	seq  uint64        // the last event received
	kept []ChangeEvent // received, for since; at most remoteWatchKeep

	// Where Next is: the feed and sequence number of the last event it
	// returned (or of the stream's start).
	curID  string
	curSeq uint64
}

// remoteItem is what the reader hands Next: an event, or only a position
// (the stream's start).
type remoteItem struct {
	ev  *ChangeEvent
	id  string
	seq uint64
}

// connect opens the stream, resuming after w.last.
func (w *remoteWatch) connect(ctx context.Context) (io.ReadCloser, error) {
	q := url.Values{"path": {w.rel}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.r.v1URL("/v1/fs/watch", q), nil)
	if err != nil {
		return nil, &Error{Code: CodeInvalidConfiguration, Op: "watch", Path: w.p, Backend: KindRemote, Err: err}
	}
	req.Header = w.r.mcpHeader(w.r.rel)
	req.Header.Set("Accept", "text/event-stream")
	w.mu.Lock()
	if w.last != "" {
		req.Header.Set("Last-Event-ID", w.last)
	}
	w.mu.Unlock()
	// The stream outlives ctx (which bounds only the connection); done
	// ends it.
	sctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	go func() {
		select {
		case <-w.done:
			cancel()
		case <-sctx.Done():
		}
	}()
	req = req.WithContext(sctx)
	resp, err := (&http.Client{Transport: w.r.core.httpTransport()}).Do(req)
	if !stop() {
		cancel()
		if err == nil {
			resp.Body.Close()
		}
		return nil, ctx.Err()
	}
	if err != nil {
		cancel()
		return nil, connClosed("watch", w.p, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		cancel()
		return nil, watchHTTPError(w.p, resp.StatusCode, b)
	}
	return &cancelBody{ReadCloser: resp.Body, cancel: cancel}, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel func()
}

func (b *cancelBody) Close() error { b.cancel(); return b.ReadCloser.Close() }

// watchHTTPError maps a refused watch request to the error Watch returns
// on a Local backend for the same cause.
func watchHTTPError(p string, status int, body []byte) error {
	msg := errorMessage(body)
	var pd struct {
		Detail string `json:"detail"`
		Code   string `json:"code"`
	}
	if json.Unmarshal(body, &pd) == nil && pd.Detail != "" {
		msg = pd.Detail
	}
	e := &Error{Code: CodeReadFailed, Op: "watch", Path: p, Backend: KindRemote}
	cause := errors.New(msg)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden && pd.Code != string(CodePathEscape):
		e.Code, cause = CodeInvalidConfiguration, fmt.Errorf("%w: %s", ErrUnauthorized, msg)
	case pd.Code == string(CodePathEscape):
		e.Code, cause = CodePathEscape, fmt.Errorf("%w: %s", ErrPathEscape, msg)
	case status == http.StatusNotFound:
		cause = &fs.PathError{Op: "watch", Path: p, Err: fs.ErrNotExist}
	case status == http.StatusNotImplemented:
		e.Code, cause = CodeNotImplemented, errors.Join(ErrNotImplemented, ErrWatchNotSupported, errors.New(msg))
	case status == http.StatusTooManyRequests || pd.Code == "WATCH_LIMIT":
		cause = fmt.Errorf("%w: %s", ErrWatchLimit, msg)
	case status == http.StatusBadRequest:
		e.Code, cause = CodeInvalidConfiguration, fmt.Errorf("%w: %s", ErrInvalidConfig, msg)
	}
	e.Err = cause
	return e
}

// run reads the stream and reconnects after a loss, until close or the
// feed ends.
func (w *remoteWatch) run(body io.ReadCloser) {
	defer close(w.stopped)
	core := w.r.core
	for {
		w.mu.Lock()
		w.body = body
		w.mu.Unlock()
		err := w.read(body)
		body.Close()
		select {
		case <-w.done:
			w.stop(fmt.Errorf("agentbe: watch: %w: closed", ErrWatchEnded))
			return
		default:
		}
		if err == nil || errors.Is(err, ErrWatchEnded) {
			w.stop(err)
			return
		}
		// Lost: reconnect, with the Remote's back-off, as often as it
		// reconnects its SSH connection.
		var cerr error
		body = nil
		for n := 0; !core.cfg.Reconnect.Disabled && (core.maxRetries() == 0 || n < core.maxRetries()); n++ {
			select {
			case <-w.done:
				w.stop(fmt.Errorf("agentbe: watch: %w: closed", ErrWatchEnded))
				return
			case <-time.After(min(core.backoff(n), 5*time.Second)):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			body, cerr = w.connect(ctx)
			cancel()
			if cerr == nil || CodeOf(cerr) != CodeConnectionClosed && CodeOf(cerr) != "" {
				break
			}
		}
		if body == nil {
			if cerr == nil {
				cerr = connClosed("watch", w.p, err)
			}
			w.stop(fmt.Errorf("agentbe: watch: %w: %w", ErrWatchEnded, cerr))
			return
		}
	}
}

func (w *remoteWatch) stop(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

// read parses server-sent events from body until it ends. It returns nil
// never: io errors (a lost connection), or an error wrapping ErrWatchEnded
// when the daemon said the feed ended.
func (w *remoteWatch) read(body io.Reader) error {
	br := bufio.NewReaderSize(body, 16<<10)
	var id, event string
	var data bytes.Buffer
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return fmt.Errorf("watch: event line over %d bytes", br.Size())
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if data.Len() > 0 || event != "" {
				if err := w.dispatch(id, event, data.Bytes()); err != nil {
					return err
				}
			}
			id, event = "", ""
			data.Reset()
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			id = string(value)
		case "event":
			event = string(value)
		case "data":
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(value)
		}
	}
}

// dispatch handles one server-sent event.
func (w *remoteWatch) dispatch(id, event string, data []byte) error {
	var it remoteItem
	switch event {
	case "ready":
		// The stream's start: the Watcher's position until its first
		// event (a resumed stream starts where the Watcher is).
		fid, seq, err := ParseWatchCursor(id)
		if err != nil {
			return fmt.Errorf("watch: bad event id %q from the daemon", id)
		}
		w.mu.Lock()
		if w.curID == "" {
			w.curID, w.curSeq = fid, seq
		}
		w.last = id
		w.mu.Unlock()
		w.readyOnce.Do(func() { close(w.ready) })
		return nil
	case "ended":
		var e struct {
			Note string `json:"note"`
		}
		_ = json.Unmarshal(data, &e)
		return fmt.Errorf("agentbe: watch: %w: %s", ErrWatchEnded, e.Note)
	case "change":
		it.ev = new(ChangeEvent)
		if err := json.Unmarshal(data, it.ev); err != nil {
			return fmt.Errorf("watch: bad event from the daemon: %w", err)
		}
	default:
		return nil
	}
	fid, seq, err := ParseWatchCursor(id)
	if err != nil {
		return fmt.Errorf("watch: bad event id %q from the daemon", id)
	}
	it.id, it.seq = fid, seq
	select {
	case w.events <- it:
	case <-w.done:
		return nil
	}
	w.mu.Lock()
	w.last, w.seq = id, seq
	if it.ev != nil {
		w.kept = append(w.kept, *it.ev)
		if len(w.kept) > remoteWatchKeep {
			w.kept = append(w.kept[:0], w.kept[len(w.kept)-remoteWatchKeep/2:]...)
		}
	}
	w.mu.Unlock()
	return nil
}

func (w *remoteWatch) next(ctx context.Context) (ChangeEvent, error) {
	for {
		var it remoteItem
		select {
		case it = <-w.events:
		default:
			select {
			case it = <-w.events:
			case <-w.stopped:
				select {
				case it = <-w.events:
				default:
					w.mu.Lock()
					defer w.mu.Unlock()
					return ChangeEvent{}, w.err
				}
			case <-w.done:
				return ChangeEvent{}, fmt.Errorf("agentbe: watch: %w: closed", ErrWatchEnded)
			case <-ctx.Done():
				return ChangeEvent{}, ctx.Err()
			}
		}
		w.mu.Lock()
		w.curID, w.curSeq = it.id, it.seq
		w.mu.Unlock()
		if it.ev != nil {
			return *it.ev, nil
		}
	}
}

func (w *remoteWatch) since(after uint64) ([]ChangeEvent, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if after > w.seq || len(w.kept) == 0 && after < w.seq || len(w.kept) > 0 && after+1 < w.kept[0].Seq {
		return nil, fmt.Errorf("agentbe: watch: %w: cursor %d, received %d", ErrCursorTooOld, after, w.seq)
	}
	var out []ChangeEvent
	for _, ev := range w.kept {
		if ev.Seq > after {
			out = append(out, ev)
		}
	}
	return out, nil
}

func (w *remoteWatch) cursor() (string, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.curID, w.curSeq
}

func (w *remoteWatch) close() error {
	w.once.Do(func() {
		close(w.done)
		if w.untrack != nil {
			w.untrack()
		}
	})
	<-w.stopped
	return nil
}
