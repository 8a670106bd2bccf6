package agentbe

import (
	"testing"
	"time"
)

// TestRemoteBackoff: delays are min(initial·multiplier^n, max), the zero
// value is the spec's default (1 s, ×2, 30 s cap, 5 retries) and
// UnlimitedRetries removes the cap on attempts.
func TestRemoteBackoff(t *testing.T) {
	def := &remoteCore{}
	var got []time.Duration
	for n := 0; n < 7; n++ {
		got = append(got, def.backoff(n))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		30 * time.Second, 30 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("default delays %v, want %v", got, want)
		}
	}
	c := &remoteCore{cfg: RemoteConfig{Reconnect: ReconnectConfig{InitialDelay: 100 * time.Millisecond,
		MaxDelay: time.Second, Multiplier: 3}}}
	for n, w := range []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 900 * time.Millisecond, time.Second} {
		if d := c.backoff(n); d != w {
			t.Errorf("attempt %d: %v, want %v", n, d, w)
		}
	}
	if d := c.backoff(5000); d != time.Second {
		t.Errorf("huge attempt count: %v (overflow?)", d)
	}
	for cfg, want := range map[int]int{0: 5, 3: 3, UnlimitedRetries: 0} {
		c := &remoteCore{cfg: RemoteConfig{Reconnect: ReconnectConfig{MaxRetries: cfg}}}
		if got := c.maxRetries(); got != want {
			t.Errorf("MaxRetries %d → %d, want %d (0 = no limit)", cfg, got, want)
		}
	}
}
