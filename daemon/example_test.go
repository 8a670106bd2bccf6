package daemon_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/agentbe/agent-backend/daemon"
)

func ExampleNormalizeScopePath() {
	for _, p := range []string{"/users/u1", "users/u1/", "a..b", "../etc", "a//b"} {
		s, err := daemon.NormalizeScopePath(p)
		fmt.Printf("%q %q %v\n", p, s, err)
	}
	// Output:
	// "/users/u1" "users/u1" <nil>
	// "users/u1/" "users/u1" <nil>
	// "a..b" "a..b" <nil>
	// "../etc" "" Scope path must not contain path traversal sequences
	// "a//b" "" Scope path must not contain path traversal sequences
}

// Serve a workspace on a listener of one's own, then shut down by
// cancelling the context.
func ExampleServer_Serve() {
	dir, _ := os.MkdirTemp("", "daemon-example")
	defer os.RemoveAll(dir)
	s, err := daemon.New(daemon.Config{
		RootDir:        filepath.Join(dir, "workspace"),
		AuthToken:      "change-me",
		SSHHostKeyPath: filepath.Join(dir, "host_key"),
		Version:        "example",
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()

	resp, err := http.Get("http://" + ln.Addr().String() + "/health")
	if err == nil {
		fmt.Println(resp.StatusCode)
		resp.Body.Close()
	}
	cancel()
	fmt.Println(<-done)
	// Output:
	// 200
	// <nil>
}
