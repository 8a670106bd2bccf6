package daemon

import (
	"context"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
)

// TestPTYRequestBounds: pty-req refuses a TERM that is too long or not a
// plain name, and a window beyond maxWinDim; window-change refuses the
// same sizes and leaves the size as it was.
func TestPTYRequestBounds(t *testing.T) {
	ptyReq := func(term string, cols, rows uint32) *ssh.Request {
		return &ssh.Request{Type: "pty-req", Payload: ssh.Marshal(struct {
			Term          string
			Cols, Rows    uint32
			Width, Height uint32
			Modes         string
		}{term, cols, rows, 0, 0, ""})}
	}
	winReq := func(cols, rows uint32) *ssh.Request {
		return &ssh.Request{Type: "window-change", Payload: ssh.Marshal(struct{ Cols, Rows, Width, Height uint32 }{cols, rows, 0, 0})}
	}
	newSession := func() *session {
		return &session{s: &Server{panics: &panicLog{}}, ctx: context.Background(), env: map[string]string{}}
	}
	var wg sync.WaitGroup
	for _, c := range []struct {
		term       string
		cols, rows uint32
		ok         bool
	}{
		{"xterm-256color", 80, 24, true},
		{"", 0, 0, true}, // defaults
		{strings.Repeat("x", maxTermLen), maxWinDim, maxWinDim, true},
		{strings.Repeat("x", maxTermLen+1), 80, 24, false},
		{"xterm\nEVIL=1", 80, 24, false},
		{"xterm\x00", 80, 24, false},
		{"x term", 80, 24, false},
		{"xterm", maxWinDim + 1, 24, false},
		{"xterm", 80, maxWinDim + 1, false},
		{"xterm", 1 << 31, 1 << 31, false},
	} {
		ss := newSession()
		if got := ss.handle(ptyReq(c.term, c.cols, c.rows), &wg); got != c.ok || (ss.pty != nil) != c.ok {
			t.Errorf("pty-req %.20q %dx%d: %v, pty %+v", c.term, c.cols, c.rows, got, ss.pty)
		}
	}
	ss := newSession()
	if !ss.handle(ptyReq("xterm", 80, 24), &wg) {
		t.Fatal("pty-req refused")
	}
	for _, w := range [][2]uint32{{maxWinDim + 1, 24}, {80, 1 << 20}} {
		if ss.handle(winReq(w[0], w[1]), &wg) || ss.pty.Cols != 80 || ss.pty.Rows != 24 {
			t.Errorf("window-change %v: accepted, pty %+v", w, ss.pty)
		}
	}
	if !ss.handle(winReq(120, 40), &wg) || ss.pty.Cols != 120 || ss.pty.Rows != 40 {
		t.Errorf("window-change 120x40: pty %+v", ss.pty)
	}
}
