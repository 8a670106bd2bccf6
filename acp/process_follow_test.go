package acp

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestFollowLogsStuckReader: a client that follows a process's logs and
// then takes nothing loses its stream once a write has waited
// followWriteTimeout: the request ends (with it its follower and whatever
// the daemon counts for it), instead of lasting as long as the client
// keeps its connection open.
func TestFollowLogsStuckReader(t *testing.T) {
	old := followWriteTimeout
	followWriteTimeout = 300 * time.Millisecond
	t.Cleanup(func() { followWriteTimeout = old })
	e := newTestEnv(t, envOpts{})
	ended := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.h.ServeHTTP(w, r)
		ended <- r.URL.Path
	}))
	defer srv.Close()
	defer srv.CloseClientConnections()
	id := e.startProc(`{"command":"yes","args":["a line of output that never ends"]}`)["id"].(string)
	defer e.do("POST", "/v1/processes/"+id+"/kill", "application/json", nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /v1/processes/%s/logs?follow=true HTTP/1.1\r\nHost: x\r\n\r\n", id)
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("follow: %q %v", status, err)
	}
	// The client reads nothing more; the output never ends.
	select {
	case p := <-ended:
		if !strings.HasSuffix(p, "/logs") {
			t.Fatalf("ended: %s", p)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the follow request still runs 20 s after its client stopped reading")
	}
}
