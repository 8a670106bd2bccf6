package agentbe

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/sandbox"
)

// firstWrite records when the first byte arrives.
type firstWrite struct {
	once sync.Once
	at   chan time.Time
}

func (f *firstWrite) Write(p []byte) (int, error) {
	f.once.Do(func() { f.at <- time.Now() })
	return len(p), nil
}

// BenchmarkFirstOutput measures start-to-first-output latency of a
// background process (StartProcess, then the first entry Follow delivers)
// next to Exec's (the first byte its Stdout writer receives), in each
// isolation mode, as the metric first-output-ns/op. ns/op is the whole
// round (the command ended and was reaped).
func BenchmarkFirstOutput(b *testing.B) {
	modes := []Isolation{IsolationNone}
	if _, err := sandbox.NewBwrap(); err == nil {
		modes = append(modes, IsolationBwrap)
	}
	for _, mode := range modes {
		l := ctLocal(b, LocalConfig{Isolation: mode})
		ctx := context.Background()
		b.Run(string(mode)+"/exec", func(b *testing.B) {
			var first time.Duration
			for b.Loop() {
				fw := &firstWrite{at: make(chan time.Time, 1)}
				start := time.Now()
				if _, err := l.Exec(ctx, "echo x", ExecOptions{Stdout: fw}); err != nil {
					b.Fatal(err)
				}
				first += (<-fw.at).Sub(start)
			}
			b.ReportMetric(float64(first.Nanoseconds())/float64(b.N), "first-output-ns/op")
		})
		b.Run(string(mode)+"/process", func(b *testing.B) {
			var first time.Duration
			stop := errors.New("first")
			for b.Loop() {
				start := time.Now()
				p, err := l.StartProcess(ctx, "echo x", ProcessOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Follow(ctx, 0, func(OutputEntry) error { return stop }); err != stop {
					b.Fatal(err)
				}
				first += time.Since(start)
				p.Wait(ctx)
				l.RemoveProcess(ctx, p.ID())
			}
			b.ReportMetric(float64(first.Nanoseconds())/float64(b.N), "first-output-ns/op")
		})
	}
}
