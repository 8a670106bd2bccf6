package acp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// The event streams (a followed log, an agent's messages) of a client that
// stops reading end once a write has waited streamWriteTimeout: the
// request ends (with it its follower and whatever the daemon counts for
// it), instead of lasting as long as the client keeps its connection open.

// stuckReaderEnv serves e's handler with a short write bound and reports
// each request's method and path as its handler returns.
func stuckReaderEnv(t *testing.T, o envOpts) (*testEnv, *httptest.Server, chan string) {
	t.Helper()
	old := streamWriteTimeout
	streamWriteTimeout = 300 * time.Millisecond
	t.Cleanup(func() { streamWriteTimeout = old })
	e := newTestEnv(t, o)
	ended := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.h.ServeHTTP(w, r)
		ended <- r.Method + " " + r.URL.Path
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return e, srv, ended
}

// getAndStopReading sends GET path and then reads nothing after the
// status line.
func getAndStopReading(t *testing.T, srv *httptest.Server, path string) {
	t.Helper()
	if status := testenv.StuckClient(t, srv.URL, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); !strings.Contains(status, " 200 ") {
		t.Fatalf("GET %s: %q", path, status)
	}
}

// waitEnded waits for the handler of a request ("METHOD /path") that ends
// in suffix to return.
func waitEnded(t *testing.T, ended chan string, suffix string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case p := <-ended:
			if strings.HasSuffix(p, suffix) {
				return
			}
		case <-deadline:
			t.Fatalf("the %s request still runs 20 s after its client stopped reading", suffix)
		}
	}
}

func TestFollowLogsStuckReader(t *testing.T) {
	e, srv, ended := stuckReaderEnv(t, envOpts{})
	id := e.startProc(`{"command":"yes","args":["a line of output that never ends"]}`)["id"].(string)
	defer e.do("POST", "/v1/processes/"+id+"/kill", "application/json", nil)
	getAndStopReading(t, srv, "/v1/processes/"+id+"/logs?follow=true")
	waitEnded(t, ended, "/logs")
}

// TestAgentStreamStuckReader: an agent that writes without end to a client
// that reads nothing of its stream. The stream had no write bound at all.
func TestAgentStreamStuckReader(t *testing.T) {
	flood := Agent{ID: "flood", Command: `line='{"jsonrpc":"2.0","method":"session/update","params":{"pad":"` +
		strings.Repeat("x", 512) + `"}}'; while :; do echo "$line"; done`}
	_, srv, ended := stuckReaderEnv(t, envOpts{agents: []Agent{flood}})
	go func() {
		// The agent never answers: the request ends with the test.
		resp, err := http.Post(srv.URL+"/v1/acp/s1?agent=flood", "application/json",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	getAndStopReading(t, srv, "/v1/acp/s1")
	waitEnded(t, ended, "GET /v1/acp/s1")
}
