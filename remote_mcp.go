package agentbe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentbe/agent-backend/mcp"
)

// rootRemote returns the Remote under b (through scopes) and the scope path
// relative to its RootDir ("" for none).
func rootRemote(b Backend) (*Remote, string) {
	rel := ""
	if s, ok := b.(*Scope); ok {
		rel = s.fullRel
	}
	for {
		switch v := b.(type) {
		case *Remote:
			return v, rel
		case *Scope:
			b = v.parent
		default:
			return nil, ""
		}
	}
}

// mcpURL is the daemon's MCP endpoint.
func (r *Remote) mcpURL() string {
	host := r.core.cfg.MCPHost
	if host == "" {
		host = r.core.cfg.Host
	}
	port := portOr(r.core.cfg.MCPPort, r.core.port())
	scheme := "http"
	if r.core.cfg.Secure {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/mcp"
}

// mcpHeader is what every MCP request of the Remote carries: the token,
// the workspace root (the daemon answers 403 when it serves another) and,
// for a scope, its path relative to the root.
func (r *Remote) mcpHeader(scopePath string) http.Header {
	h := r.core.header()
	h.Set("X-Root-Dir", r.core.rootDir)
	if scopePath != "" && scopePath != "." {
		h.Set("X-Scope-Path", scopePath)
	}
	return h
}

// remoteMCPClient returns an initialized client of the daemon's MCP
// endpoint for r (scoped to scopePath), tracked by r: Destroy closes it,
// closing it first untracks it. Errors of MCP calls are returned as they
// are, never retried.
func remoteMCPClient(ctx context.Context, r *Remote, scopePath string, info mcp.Implementation, onClose func()) (*mcp.Client, error) {
	if err := r.core.alive("mcp", ""); err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: mcpTransport{r.core.httpTransport()}}
	c := mcp.NewHTTPClient(r.mcpURL(), mcp.HTTPClientOptions{ClientOptions: mcp.ClientOptions{Info: info},
		Header: r.mcpHeader(scopePath), HTTPClient: hc, OnClose: onClose})
	if _, err := c.Initialize(ctx); err != nil {
		c.Close()
		code := CodeOf(err)
		if code == "" {
			code = CodeConnectionClosed
		}
		return nil, &Error{Code: code, Op: "mcp", Backend: KindRemote,
			Err: &wrapped{msg: "MCP initialize", err: err, is: ErrConnectionClosed}}
	}
	return c, nil
}

// mcpTransport gives the failures of a Remote's MCP requests the codes the
// same failures have in its other operations: a daemon that cannot be
// reached or is lost during a request (refused, reset, closed mid-answer)
// is CONNECTION_CLOSED; a refused token (401) or request (403) is
// INVALID_CONFIGURATION wrapping ErrUnauthorized, as at connect. A
// cancelled request keeps its context's error. The mcp package's client
// sees these errors (inside *url.Error) and returns them from its calls.
type mcpTransport struct{ rt http.RoundTripper }

func (t mcpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		return nil, mcpLoss(req, err)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		resp.Body.Close()
		what := "token"
		if resp.StatusCode == http.StatusForbidden {
			what = "request"
		}
		return nil, &Error{Code: CodeInvalidConfiguration, Op: "mcp", Backend: KindRemote,
			Err: fmt.Errorf("%w: the daemon refused the %s (HTTP %d: %s)", ErrUnauthorized, what,
				resp.StatusCode, errorMessage(body))}
	}
	resp.Body = &mcpBody{ReadCloser: resp.Body, req: req}
	return resp, nil
}

// mcpLoss is the error of a request whose connection failed.
func mcpLoss(req *http.Request, err error) error {
	if req.Context().Err() != nil {
		return err
	}
	return connClosed("mcp", "", err)
}

// mcpBody is a response body whose read errors (the daemon lost mid-answer)
// are CONNECTION_CLOSED.
type mcpBody struct {
	io.ReadCloser
	req *http.Request
}

func (b *mcpBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = mcpLoss(b.req, err)
	}
	return n, err
}

// errorMessage returns the "message" of the daemon's JSON error body, or
// the body itself.
func errorMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		return e.Message
	}
	return strings.TrimSpace(string(body))
}

// httpTransport is the Remote's HTTP transport for MCP, shared by its
// clients (keep-alive connections) and closed on Destroy.
func (c *remoteCore) httpTransport() *http.Transport {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.http == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = c.cfg.TLS
		t.MaxIdleConnsPerHost = 32
		c.http = t
		c.life.track(closerFunc(func() error { t.CloseIdleConnections(); return nil }))
	}
	return c.http
}

// closerFunc adapts a function to io.Closer.
type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// MCPEndpoint returns the URL of the daemon's MCP endpoint (Streamable
// HTTP) and the headers every request to it must carry (token, root), for
// an MCP client library of the caller's choice; MCPClient uses the same.
// The headers are a copy.
func (r *Remote) MCPEndpoint() (url string, header http.Header) {
	return r.mcpURL(), r.mcpHeader(r.rel)
}
