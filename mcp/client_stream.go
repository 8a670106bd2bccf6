package mcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"encoding/json"
)

// NewStreamClient returns a Client speaking newline-delimited JSON-RPC over
// rwc: the MCP stdio transport, to a child process (its stdout to read,
// its stdin to write; Close then closes rwc, which should close the
// child's stdin and reap it) or to any stream. Close closes rwc.
func NewStreamClient(rwc io.ReadWriteCloser, opts ClientOptions) *Client {
	return newClient(newStreamTransport(rwc, rwc, rwc.Close), opts)
}

type streamTransport struct {
	w       io.Writer
	closeFn func() error

	wmu sync.Mutex

	mu      sync.Mutex
	pending map[string]chan []byte
	err     error // set when the read loop ended
	done    chan struct{}
}

func newStreamTransport(r io.Reader, w io.Writer, closeFn func() error) *streamTransport {
	t := &streamTransport{w: w, closeFn: closeFn, pending: make(map[string]chan []byte), done: make(chan struct{})}
	go t.readLoop(r)
	return t
}

func (t *streamTransport) readLoop(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var line []byte
		line, err = readLine(br, MaxStdioMessageBytes)
		if len(line) > 0 {
			t.deliver(line)
		}
		if err != nil && !errors.Is(err, errLineTooLong) {
			break
		}
	}
	t.mu.Lock()
	if err == io.EOF || err == nil {
		err = ErrClosed
	}
	t.err = err
	t.mu.Unlock()
	close(t.done)
}

func (t *streamTransport) deliver(line []byte) {
	if isBatch(line) {
		var elems []json.RawMessage
		if json.Unmarshal(line, &elems) == nil {
			for _, e := range elems {
				t.deliver(e)
			}
		}
		return
	}
	id := idOf(line)
	if id == nil {
		return // a notification or request from the server: none is used here
	}
	var probe struct {
		Method *string `json:"method"`
	}
	if json.Unmarshal(line, &probe) == nil && probe.Method != nil {
		// A server-to-client request (e.g. roots/list): we declare no
		// capabilities, so answer "method not found".
		t.write(appendError(nil, id, CodeMethodNotFound, "Method not found", nil))
		return
	}
	t.mu.Lock()
	ch := t.pending[idKey(id)]
	delete(t.pending, idKey(id))
	t.mu.Unlock()
	if ch != nil {
		ch <- append([]byte(nil), line...)
	}
}

func (t *streamTransport) write(msg []byte) error {
	b := make([]byte, 0, len(msg)+1)
	b = append(append(b, msg...), '\n')
	t.wmu.Lock()
	defer t.wmu.Unlock()
	_, err := t.w.Write(b)
	return err
}

func (t *streamTransport) roundTrip(ctx context.Context, id json.RawMessage, msg []byte, _ *rpcHeaders) ([]byte, error) {
	ch := make(chan []byte, 1)
	key := idKey(id)
	t.mu.Lock()
	if t.err != nil {
		err := t.err
		t.mu.Unlock()
		return nil, err
	}
	t.pending[key] = ch
	t.mu.Unlock()
	if err := t.write(msg); err != nil {
		t.forget(key)
		return nil, fmt.Errorf("mcp: write: %w", err)
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		t.forget(key)
		return nil, ctx.Err()
	case <-t.done:
		t.forget(key)
		select {
		case resp := <-ch:
			return resp, nil
		default:
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		return nil, t.err
	}
}

func (t *streamTransport) forget(key string) {
	t.mu.Lock()
	delete(t.pending, key)
	t.mu.Unlock()
}

func (t *streamTransport) notify(ctx context.Context, msg []byte) error {
	return t.write(msg)
}

func (t *streamTransport) setProtocolVersion(string) {}

func (t *streamTransport) close() error {
	err := t.closeFn()
	<-t.done
	return err
}
