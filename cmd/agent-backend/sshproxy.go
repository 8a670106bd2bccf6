package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"golang.org/x/net/websocket"
)

const sshProxyUsage = "usage: agent-backend ssh-proxy --url ws://HOST:PORT/ssh [--token-file FILE]"

// runSSHProxy implements `agent-backend ssh-proxy`: it connects to a
// daemon's /ssh endpoint and bridges stdin/stdout to it, so OpenSSH works
// unchanged through `-o ProxyCommand='agent-backend ssh-proxy --url …'`.
// The token (from --token-file, never the command line, which other users
// can read in ps) is sent as "Authorization: Bearer". It exits 0 when
// either side closes.
func runSSHProxy(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ssh-proxy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rawURL := fs.String("url", "", "WebSocket URL of the daemon's /ssh endpoint")
	tokenFile := fs.String("token-file", "", "file holding the daemon's auth token")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, sshProxyUsage)
			return 0
		}
		fmt.Fprintf(stderr, "agent-backend ssh-proxy: %v\n%s\n", err, sshProxyUsage)
		return 1
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agent-backend ssh-proxy: unexpected argument %q\n%s\n", fs.Arg(0), sshProxyUsage)
		return 1
	}
	u, err := url.Parse(*rawURL)
	if *rawURL == "" || err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		fmt.Fprintf(stderr, "agent-backend ssh-proxy: --url must be a ws:// or wss:// URL, got %q\n", *rawURL)
		return 1
	}
	origin := "http://" + u.Host
	if u.Scheme == "wss" {
		origin = "https://" + u.Host
	}
	cfg, err := websocket.NewConfig(u.String(), origin)
	if err != nil {
		fmt.Fprintf(stderr, "agent-backend ssh-proxy: --url: %v\n", err)
		return 1
	}
	if *tokenFile != "" {
		tok, err := readTokenFile(*tokenFile)
		if err != nil {
			fmt.Fprintf(stderr, "agent-backend ssh-proxy: --token-file: %v\n", err)
			return 1
		}
		cfg.Header = http.Header{"Authorization": {"Bearer " + tok}}
	}
	ws, err := websocket.DialConfig(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "agent-backend ssh-proxy: %v\n", err)
		return 1
	}
	ws.PayloadType = websocket.BinaryFrame
	var once sync.Once
	closeWS := func() { once.Do(func() { ws.Close() }) }
	down := make(chan struct{})
	go func() {
		defer close(down)
		io.Copy(stdout, ws)
	}()
	go func() {
		io.Copy(ws, stdin)
		// stdin closed: the client is done. Give the daemon a moment to
		// finish its side, then close.
		select {
		case <-down:
		case <-time.After(2 * time.Second):
		}
		closeWS()
	}()
	<-down
	closeWS()
	return 0
}
