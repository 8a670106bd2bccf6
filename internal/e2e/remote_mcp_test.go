package e2e_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// TestRemoteMCPLossCode: losing the daemon gives an MCP call on a Remote
// the code the same loss gives everywhere else, CONNECTION_CLOSED: a call
// in flight when the daemon dies, and a call made while it is dead. A
// cancelled call is not a loss, and once the daemon is back the same client
// works again.
func TestRemoteMCPLossCode(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "mcp-token")
	r := d.remote(t, nil)
	c, err := agentbe.MCPClient(ctx, r, agentbe.MCPOptions{})
	must(t, err)
	if _, err := c.ListTools(ctx); err != nil {
		t.Fatal(err)
	}

	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "exec", map[string]any{"command": "touch started; sleep 30"})
		errc <- err
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(d.root, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the exec call never started")
		}
	}
	d.kill()
	select {
	case err := <-errc:
		if agentbe.CodeOf(err) != agentbe.CodeConnectionClosed || !errors.Is(err, agentbe.ErrConnectionClosed) {
			t.Errorf("call in flight when the daemon died: %v (code %q)", err, agentbe.CodeOf(err))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call in flight did not fail")
	}
	for _, name := range []string{"first", "second"} {
		_, err := c.ListTools(ctx)
		if agentbe.CodeOf(err) != agentbe.CodeConnectionClosed || !errors.Is(err, agentbe.ErrConnectionClosed) {
			t.Errorf("%s call with the daemon dead: %v (code %q)", name, err, agentbe.CodeOf(err))
		}
	}
	if _, err := agentbe.MCPClient(ctx, r, agentbe.MCPOptions{}); agentbe.CodeOf(err) != agentbe.CodeConnectionClosed {
		t.Errorf("a new client with the daemon dead: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.ListTools(cctx); !errors.Is(err, context.Canceled) || agentbe.CodeOf(err) == agentbe.CodeConnectionClosed {
		t.Errorf("cancelled call: %v", err)
	}

	d.start()
	if _, err := c.ListTools(ctx); err != nil {
		t.Errorf("after the daemon came back: %v", err)
	}
}

// TestRemoteMCPRefusedToken: a refused token is the same failure over MCP
// as over SSH: INVALID_CONFIGURATION wrapping ErrUnauthorized, at
// initialize and on a call.
func TestRemoteMCPRefusedToken(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "right")
	bad := d.remote(t, func(c *agentbe.RemoteConfig) { c.Token = "wrong" })
	sshErr := bad.Connect(ctx)
	_, mcpErr := agentbe.MCPClient(ctx, bad, agentbe.MCPOptions{})
	for name, err := range map[string]error{"ssh": sshErr, "mcp": mcpErr} {
		if !errors.Is(err, agentbe.ErrUnauthorized) || agentbe.CodeOf(err) != agentbe.CodeInvalidConfiguration {
			t.Errorf("%s with a wrong token: %v (code %q)", name, err, agentbe.CodeOf(err))
		}
	}

	// The token changes under a client already initialized.
	r := d.remote(t, func(c *agentbe.RemoteConfig) { c.Token = "right" })
	c, err := agentbe.MCPClient(ctx, r, agentbe.MCPOptions{})
	must(t, err)
	d.kill()
	d.token = "rotated"
	d.start()
	_, err = c.ListTools(ctx)
	if err != nil && !errors.Is(err, agentbe.ErrUnauthorized) {
		// The client's pooled connection to the killed daemon may not have
		// seen its close yet (a loaded machine): that call honestly fails
		// as a lost connection, and the next one reaches the new daemon.
		_, err = c.ListTools(ctx)
	}
	if !errors.Is(err, agentbe.ErrUnauthorized) || agentbe.CodeOf(err) != agentbe.CodeInvalidConfiguration {
		t.Errorf("call with a token the daemon no longer takes: %v (code %q)", err, agentbe.CodeOf(err))
	}
}
