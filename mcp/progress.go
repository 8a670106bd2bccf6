package mcp

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/agentbe/agent-backend/internal/jsonraw"
)

// notifierKey carries, in a request's context, the notifier that delivers
// a notification related to that request before its response: the stdio
// transport writes it as a line, the HTTP transport as an event of the
// request's SSE response stream. Without one (Handle, batches, a client
// that accepts only JSON) a tool's progress is not sent.
type notifierKey struct{}

// notifier delivers one notification (an encoded JSON-RPC message).
type notifier interface{ notify(msg []byte) }

func withNotifier(ctx context.Context, n notifier) context.Context {
	return context.WithValue(ctx, notifierKey{}, n)
}

// withoutNotifier is ctx without a notifier: a task outlives its request,
// and its progress has nowhere to go.
func withoutNotifier(ctx context.Context) context.Context {
	if ctx.Value(notifierKey{}) == nil {
		return ctx
	}
	return context.WithValue(ctx, notifierKey{}, nil)
}

func notifierOf(ctx context.Context) notifier {
	n, _ := ctx.Value(notifierKey{}).(notifier)
	return n
}

// notifyFunc is a notifier made of a function.
type notifyFunc func([]byte)

func (f notifyFunc) notify(msg []byte) { f(msg) }

// progressToken returns params._meta.progressToken (a string or a number,
// as raw JSON), or nil.
func progressToken(m *Message) json.RawMessage { return metaOf(m).progress }

// progressSink sends the notifications/progress of one tools/call.
type progressSink struct {
	token json.RawMessage
	send  notifier

	mu      sync.Mutex
	n       int64
	stopped bool
}

// progressFor returns the sink for the call m, or nil when the request
// asked for no progress or the transport cannot deliver it.
func (s *Server) progressFor(ctx context.Context, m *Message) *progressSink {
	send := notifierOf(ctx)
	if send == nil {
		return nil
	}
	tok := progressToken(m)
	if tok == nil {
		return nil
	}
	return &progressSink{token: tok, send: send}
}

// report sends one notifications/progress, progress counting up from 1.
// Notifications are sent in order, and none after stop.
func (p *progressSink) report(message string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.n++
	b := make([]byte, 0, 128+len(p.token)+len(message))
	b = append(b, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`...)
	b = append(b, p.token...)
	b = append(b, `,"progress":`...)
	b = strconv.AppendInt(b, p.n, 10)
	if message != "" {
		b = append(b, `,"message":`...)
		b = jsonraw.AppendString(b, message)
	}
	b = append(b, `}}`...)
	p.send.notify(b)
}

// stop ends the sink: the response follows, and nothing may come after it.
func (p *progressSink) stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}
