package agentbe

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"time"

	"github.com/agentbe/agent-backend/internal/wsnet"
)

// ErrDaemonFull is wrapped by the error (code DAEMON_FULL) of a Remote
// whose daemon answered that it serves as many connections as it accepts
// (HTTP 503 to the WebSocket upgrade), still so after a few retries. The
// daemon is up: try again later, or elsewhere. Such an error does not match
// ErrConnectionClosed, and a Pool does not take the daemon for dead.
var ErrDaemonFull = errors.New("daemon full")

// Retries of a full daemon: at most fullRetries more upgrades, each after
// the daemon's Retry-After (at most maxFullWait) or, without one, a backoff
// from fullBackoff; all within the connect timeout.
const (
	fullRetries = 3
	fullBackoff = 250 * time.Millisecond
	maxFullWait = 5 * time.Second
)

// dialDaemon opens the daemon's /ssh WebSocket, asking again while it
// answers that it is full (see fullRetries). A retry that would end past
// ctx's deadline is not made: the daemon's last answer is returned.
func (c *remoteCore) dialDaemon(ctx context.Context) (net.Conn, error) {
	for attempt := 0; ; attempt++ {
		conn, err := c.dialWebSocket(ctx)
		var busy *wsnet.BusyError
		if !errors.As(err, &busy) || attempt == fullRetries {
			return conn, err
		}
		wait := fullWait(busy.RetryAfter, attempt)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, err
		}
	}
}

// fullWait is how long to wait before asking a full daemon again: its
// Retry-After or a doubling backoff, capped, plus up to a fifth more at
// random so that clients turned away together do not return together.
func fullWait(retryAfter time.Duration, attempt int) time.Duration {
	d := retryAfter
	if d <= 0 {
		d = fullBackoff << attempt
	}
	d = min(d, maxFullWait)
	return d + rand.N(d/5+1)
}
