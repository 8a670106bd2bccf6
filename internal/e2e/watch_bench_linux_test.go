//go:build linux

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// BenchmarkWatchLatency measures the time from writing a file on the host
// (open, write, close) to the event's delivery to a Watcher blocked in
// Next: on a Local backend (inotify → feed → Watcher) and on a Remote (the
// same, then the daemon's SSE route over loopback HTTP), in one run.
// ns/op is that latency; the internal/watch benchmarks compare the feed
// with a bare inotify read.
func BenchmarkWatchLatency(b *testing.B) {
	ctx := context.Background()
	d := startDaemon(b, "tok")
	l, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: d.root})
	must(b, err)
	defer l.Destroy(ctx)
	r := d.remote(b, nil)
	for _, c := range []struct {
		name string
		b    agentbe.Backend
	}{{"local", l}, {"remote-sse", r}} {
		b.Run(c.name, func(b *testing.B) {
			dir := filepath.Join(d.root, c.name)
			must(b, os.MkdirAll(dir, 0o755))
			w, err := agentbe.Watch(ctx, c.b, c.name, agentbe.WatchOptions{})
			must(b, err)
			defer w.Close()
			// Distinct files, so that no write falls in the coalescing
			// window of the one before.
			b.ResetTimer()
			for i := range b.N {
				name := fmt.Sprintf("f%d", i)
				if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
					b.Fatal(err)
				}
				want := c.name + "/" + name
				for {
					ev, err := w.Next(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if ev.Path == want {
						break
					}
				}
			}
		})
	}
}

// BenchmarkWatchThroughput measures events delivered per second to a
// Watcher (Local, and Remote over SSE) for a burst of file creations made
// as fast as the host makes them: events/s is the rate from the first
// creation to the last event received; one op is one burst of 2,000
// files.
func BenchmarkWatchThroughput(b *testing.B) {
	ctx := context.Background()
	d := startDaemon(b, "tok")
	l, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: d.root})
	must(b, err)
	defer l.Destroy(ctx)
	r := d.remote(b, nil)
	const burst = 2000
	for _, c := range []struct {
		name string
		b    agentbe.Backend
	}{{"local", l}, {"remote-sse", r}} {
		b.Run(c.name, func(b *testing.B) {
			var events int
			var elapsed time.Duration
			dir := "burst-" + c.name
			must(b, os.MkdirAll(filepath.Join(d.root, dir), 0o755))
			w, err := agentbe.Watch(ctx, c.b, dir, agentbe.WatchOptions{})
			must(b, err)
			defer w.Close()
			for i := range b.N {
				start := time.Now()
				go func() {
					for j := range burst {
						os.WriteFile(filepath.Join(d.root, dir, fmt.Sprintf("f%d-%04d", i, j)), nil, 0o644)
					}
				}()
				last := fmt.Sprintf("%s/f%d-%04d", dir, i, burst-1)
				for {
					ev, err := w.Next(ctx)
					if err != nil {
						b.Fatal(err)
					}
					events++
					if ev.Path == last {
						break
					}
				}
				elapsed += time.Since(start)
			}
			b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
		})
	}
}
