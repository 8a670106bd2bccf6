package mcp

import (
	"context"
	"encoding/json"
)

// NewInProcessClient returns a Client connected directly to s, without
// any transport: requests are dispatched by s.Handle in the caller's
// goroutine, and cancelling a call's context cancels the tool's context.
// It is what a backend whose data lives in this process (Memory) uses.
func NewInProcessClient(s *Server, opts ClientOptions) *Client {
	return newClient(&inProcessTransport{s: s}, opts)
}

type inProcessTransport struct{ s *Server }

func (t *inProcessTransport) roundTrip(ctx context.Context, id json.RawMessage, msg []byte, _ *rpcHeaders) ([]byte, error) {
	m, err := DecodeMessage(msg)
	if err != nil {
		return nil, err
	}
	resp := t.s.Handle(ctx, m)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if resp == nil {
		return nil, ErrClosed
	}
	return resp, nil
}

func (t *inProcessTransport) notify(ctx context.Context, msg []byte) error {
	if m, err := DecodeMessage(msg); err == nil {
		t.s.Handle(ctx, m)
	}
	return nil
}

func (t *inProcessTransport) setProtocolVersion(string) {}
func (t *inProcessTransport) close() error              { return nil }
