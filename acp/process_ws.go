package acp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"golang.org/x/net/websocket"

	agentbe "github.com/agentbe/agent-backend"
)

// terminalFrame is a JSON text frame of the terminal WebSocket, either
// way: ready, exit, error (server); input, resize, close (client).
type terminalFrame struct {
	Type      string  `json:"type"`
	ProcessID string  `json:"processId,omitempty"`
	ExitCode  *int    `json:"exitCode,omitempty"`
	Message   string  `json:"message,omitempty"`
	Data      *string `json:"data,omitempty"`
	Encoding  string  `json:"encoding,omitempty"`
	Cols      int     `json:"cols,omitempty"`
	Rows      int     `json:"rows,omitempty"`
}

// frameCodec receives a frame with its payload type (text or binary).
var frameCodec = websocket.Codec{
	Marshal: func(v any) ([]byte, byte, error) {
		switch d := v.(type) {
		case []byte:
			return d, websocket.BinaryFrame, nil
		default:
			b, err := json.Marshal(v)
			return b, websocket.TextFrame, err
		}
	},
	Unmarshal: func(data []byte, payloadType byte, v any) error {
		f := v.(*wsFrame)
		f.binary, f.data = payloadType == websocket.BinaryFrame, data
		return nil
	},
}

type wsFrame struct {
	binary bool
	data   []byte
}

// maxTerminalFrame bounds a client frame.
const maxTerminalFrame = 1 << 20

// procTerminal serves GET /v1/processes/{id}/terminal/ws: the ready frame,
// then the process's pty output (from the start of what its ring keeps) as
// binary frames, and an exit frame when it ends; client text frames are
// input (text unless encoding says base64), resize and close, client
// binary frames raw input.
func (h *Handler) procTerminal(w http.ResponseWriter, r *http.Request, _ *procSpace, e *procEntry) {
	if !e.tty {
		writeProblem(w, conflict("process is not running in tty mode"))
		return
	}
	srv := websocket.Server{
		// Host and Origin were checked before the request got here.
		Handshake: func(*websocket.Config, *http.Request) error { return nil },
		Handler:   func(ws *websocket.Conn) { h.terminalSession(r.Context(), ws, e) },
	}
	srv.ServeHTTP(w, r)
}

func (h *Handler) terminalSession(parent context.Context, ws *websocket.Conn, e *procEntry) {
	ws.MaxPayloadBytes = maxTerminalFrame
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var wmu sync.Mutex
	send := func(v any) error {
		wmu.Lock()
		defer wmu.Unlock()
		return frameCodec.Send(ws, v)
	}
	if send(terminalFrame{Type: "ready", ProcessID: e.id}) != nil {
		return
	}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer cancel()
		for {
			var f wsFrame
			if err := frameCodec.Receive(ws, &f); err != nil {
				return
			}
			if f.binary {
				if _, err := e.p.WriteContext(ctx, f.data); err != nil {
					return
				}
				continue
			}
			var c terminalFrame
			if err := json.Unmarshal(f.data, &c); err != nil {
				_ = send(terminalFrame{Type: "error", Message: "invalid frame"})
				continue
			}
			switch c.Type {
			case "input":
				if c.Data == nil {
					continue
				}
				enc := c.Encoding
				if enc == "" {
					enc = "text"
				}
				data, p := decodeInput(*c.Data, enc)
				if p != nil {
					_ = send(terminalFrame{Type: "error", Message: p.Detail})
					continue
				}
				if _, err := e.p.WriteContext(ctx, data); err != nil {
					_ = send(terminalFrame{Type: "error", Message: "process is not running"})
				}
			case "resize":
				if err := e.p.Resize(ctx, c.Cols, c.Rows); err != nil {
					_ = send(terminalFrame{Type: "error", Message: "cannot resize the terminal"})
				}
			case "close":
				return
			default:
				_ = send(terminalFrame{Type: "error", Message: "unknown frame type"})
			}
		}
	}()
	err := e.p.Follow(ctx, 0, func(x agentbe.OutputEntry) error {
		return send(x.Data)
	})
	if err == nil {
		in, _ := e.p.Info(ctx)
		f := terminalFrame{Type: "exit"}
		if in.ExitCode >= 0 {
			code := in.ExitCode
			f.ExitCode = &code
		}
		_ = send(f)
	}
	if err == nil || !errors.Is(err, context.Canceled) {
		cancel()
	}
	ws.Close()
	<-readDone
}
