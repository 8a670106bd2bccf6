package agentbe

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"
)

// BenchmarkTenantP99 measures what one tenant's hostile command costs the
// others: the latency of a small command (`true`, under bwrap) in group
// A, idle and while group B runs, over and over, a 1 GiB allocation, a
// fork bomb or four busy loops. Both groups have the limits an operator
// would give a tenant on a small host (256 MiB, 64 processes, 1 core).
// Each sub-benchmark reports p50 and p99 (ms); compare each load's p99 with
// idle's, which the same run measures first.
//
//	go test -run '^$' -bench BenchmarkTenantP99 -benchtime 200x .
func BenchmarkTenantP99(b *testing.B) {
	requireBwrap(b)
	requireCgroups(b)
	l, err := NewLocal(LocalConfig{RootDir: b.TempDir(), Isolation: IsolationBwrap, AllowDangerous: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Destroy(context.Background())
	tenant := ResourceLimits{MemoryBytes: 256 << 20, Pids: 64, CPU: 1}
	scope := func(name string) *Scope {
		g, err := l.NewResourceGroup(fmt.Sprintf("bench-%s-%d", name, os.Getpid()), tenant)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { g.Close() })
		s, err := l.Scope(name, ScopeOptions{Group: g, Limits: tenant})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	a, hostile := scope("a"), scope("b")
	loads := []struct{ name, command string }{
		{"idle", ""},
		{"alloc-1GiB", `perl -e 'vec($x, (1<<30)-1, 8) = 1'`},
		{"fork-bomb", `f() { f | f & }; f; wait`},
		{"busy-loops", `for i in 1 2 3 4; do (while :; do :; done) & done; wait`},
	}
	for _, ld := range loads {
		b.Run(ld.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var stopped int
			if ld.command != "" {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						_, err := hostile.Exec(ctx, ld.command, ExecOptions{Timeout: 30 * time.Second})
						if CodeOf(err) == CodeLimitExceeded {
							stopped++
						}
					}
				}()
				time.Sleep(500 * time.Millisecond) // the load is running
			}
			lat := make([]time.Duration, 0, b.N)
			var failed int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if _, err := a.Exec(context.Background(), "true", ExecOptions{}); err != nil {
					// Counted, not fatal: the latency is what is measured.
					failed++
					b.Logf("small command failed: %v", err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			cancel()
			wg.Wait()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
			b.ReportMetric(float64(failed), "small-failed")
			if ld.command != "" {
				b.ReportMetric(float64(stopped), "hostile-stopped")
			}
		})
	}
}
