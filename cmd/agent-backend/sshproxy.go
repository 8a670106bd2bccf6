package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbe/agent-backend/internal/wsnet"
)

const sshProxyUsage = "usage: agent-backend ssh-proxy --url ws://HOST:PORT/ssh [--token-file FILE]"

// sshProxyDialTimeout bounds the connection and the WebSocket upgrade.
const sshProxyDialTimeout = 30 * time.Second

// runSSHProxy implements `agent-backend ssh-proxy`: it connects to a
// daemon's /ssh endpoint and bridges stdin/stdout to it, so OpenSSH works
// unchanged through `-o ProxyCommand='agent-backend ssh-proxy --url …'`.
// The token (from --token-file, never the command line, which other users
// can read in ps) is sent as "Authorization: Bearer".
//
// It exits 0 when the session ends normally (either side closes, the
// daemon with close code 1000). Every failure is said on stderr, which
// OpenSSH shows, with a non-zero exit: a refused token (HTTP 401 or close
// 4001), a daemon that cannot be reached, is full (503) or answers
// something else, and a connection lost mid-session.
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
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "agent-backend ssh-proxy: "+format+"\n", a...)
		return 1
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agent-backend ssh-proxy: unexpected argument %q\n%s\n", fs.Arg(0), sshProxyUsage)
		return 1
	}
	u, err := url.Parse(*rawURL)
	if *rawURL == "" || err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return fail("--url must be a ws:// or wss:// URL, got %q", *rawURL)
	}
	header := http.Header{}
	if *tokenFile != "" {
		tok, err := readTokenFile(*tokenFile)
		if err != nil {
			return fail("--token-file: %v", err)
		}
		header.Set("Authorization", "Bearer "+tok)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sshProxyDialTimeout)
	ws, err := wsnet.Dial(ctx, u.String(), wsnet.DialConfig{Header: header})
	cancel()
	if err != nil {
		return fail("%s", dialFailure(u, err))
	}

	var closing atomic.Bool // set once this side decided to close
	var once sync.Once
	closeWS := func() { once.Do(func() { closing.Store(true); ws.Close() }) }
	type result struct {
		err      error
		stdoutOK bool // false: stdout failed (the client went away)
	}
	down := make(chan result, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := ws.Read(buf)
			if n > 0 {
				if _, werr := stdout.Write(buf[:n]); werr != nil {
					down <- result{werr, false}
					return
				}
			}
			if err != nil {
				down <- result{err, true}
				return
			}
		}
	}()
	done := make(chan struct{})
	go func() {
		io.Copy(ws, stdin)
		// stdin closed: the client is done. Give the daemon a moment to
		// finish its side, then close.
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
		closeWS()
	}()
	res := <-down
	close(done)
	if !res.stdoutOK || closing.Load() {
		closeWS()
		return 0
	}
	closeWS()
	code, reason := ws.CloseCode()
	switch {
	case errors.Is(res.err, wsnet.ErrUnauthorized):
		return fail("the daemon refused the token (WebSocket close 4001%s); check --token-file", withReason(reason))
	case code == wsnet.CloseNormal:
		return 0
	case code != 0:
		return fail("the daemon closed the connection (WebSocket close %d%s)", code, withReason(reason))
	}
	return fail("connection to the daemon at %s lost: %v", u.Host, res.err)
}

func withReason(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

// dialFailure says why the WebSocket to u could not be opened.
func dialFailure(u *url.URL, err error) string {
	var be *wsnet.BusyError
	if errors.As(err, &be) {
		s := "the daemon is full (HTTP 503" + withReason(be.Message) + ")"
		if be.RetryAfter > 0 {
			s += fmt.Sprintf("; retry after %v", be.RetryAfter)
		}
		return s
	}
	var ue *wsnet.UpgradeError
	if errors.As(err, &ue) {
		detail := fmt.Sprintf("HTTP %d%s", ue.StatusCode, withReason(bodyMessage(ue.Body)))
		switch ue.StatusCode {
		case http.StatusUnauthorized:
			return "the daemon refused the token (" + detail + "); check --token-file"
		case http.StatusForbidden:
			return "the daemon refused the connection (" + detail + ")"
		}
		return "the daemon at " + u.Host + " answered the WebSocket upgrade with " + detail + " (is --url its /ssh endpoint?)"
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return "cannot reach the daemon at " + u.Host + ": " + oe.Err.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || isTimeout(err) {
		return fmt.Sprintf("no answer from the daemon at %s within %v", u.Host, sshProxyDialTimeout)
	}
	return "cannot connect to " + u.Redacted() + ": " + err.Error()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// bodyMessage returns the "message" of the daemon's JSON error body, or
// the body itself, bounded.
func bodyMessage(body string) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(body), &e) == nil && e.Message != "" {
		body = e.Message
	}
	if len(body) > 200 {
		body = body[:200] + "…"
	}
	return body
}
