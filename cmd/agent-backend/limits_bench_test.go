package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkDaemonTenantP99 measures what one tenant's hostile commands cost
// another on the real daemon: the latency of bob's small command (MCP
// `exec` of `true` over HTTP, under bwrap), idle and while alice runs,
// over and over, a 1 GiB allocation, a fork bomb or four busy loops. Both
// have the limits an operator would give a tenant on a small host (256
// MiB, 64 processes, 1 core). Each sub-benchmark reports p50 and p99 (ms);
// compare each load's p99 with idle's, which the same run measures first.
//
//	go test -run '^$' -bench BenchmarkDaemonTenantP99 -benchtime 200x ./cmd/agent-backend
func BenchmarkDaemonTenantP99(b *testing.B) {
	requireLimits(b)
	bin := cliBinary(b)
	dir := b.TempDir()
	limits := `{"memoryBytes":268435456,"pids":64,"cpu":1,"mcpInFlight":8}`
	doc := `{"tenants":[{"name":"alice","tokenSha256":"` + tokenSum(aliceToken) + `","scope":"users/alice","limits":` + limits + `},` +
		`{"name":"bob","tokenSha256":"` + tokenSum(bobToken) + `","scope":"users/bob","limits":` + limits + `}]}`
	tf := filepath.Join(dir, "tenants.json")
	os.WriteFile(tf, []byte(doc), 0o600)
	d := startTenantsDaemon(b, bin, filepath.Join(dir, "ws"), "--tenants", tf)
	alice, bob := tenantClient{b, d.port, aliceToken}, tenantClient{b, d.port, bobToken}
	loads := []struct{ name, command string }{
		{"idle", ""},
		{"alloc-1GiB", `perl -e 'vec($x, (1<<30)-1, 8) = 1'`},
		{"fork-bomb", `f() { f | f & }; f; wait`},
		{"busy-loops", `for i in 1 2 3 4; do (while :; do :; done) & done; wait`},
	}
	for _, ld := range loads {
		b.Run(ld.name, func(b *testing.B) {
			var stop atomic.Bool
			var wg sync.WaitGroup
			var hostileRuns, stopped atomic.Int32
			if ld.command != "" {
				wg.Go(func() {
					for !stop.Load() {
						_, body := alice.tool("exec", `{"command":"`+strings.ReplaceAll(ld.command, `"`, `\"`)+`","timeout":30}`)
						hostileRuns.Add(1)
						if strings.Contains(body, "LIMIT_EXCEEDED") {
							stopped.Add(1)
						}
					}
				})
				time.Sleep(500 * time.Millisecond) // the load is running
			}
			lat := make([]time.Duration, 0, b.N)
			var failed int
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if st, body := bob.tool("exec", `{"command":"true"}`); st != 200 || strings.Contains(body, `"isError":true`) {
					failed++ // counted, not fatal: the latency is what is measured
					b.Logf("small command failed: %d %s", st, body)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			stop.Store(true)
			wg.Wait()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
			b.ReportMetric(float64(failed), "small-failed")
			if ld.command != "" {
				b.ReportMetric(float64(hostileRuns.Load()), "hostile-runs")
				b.ReportMetric(float64(stopped.Load()), "hostile-stopped")
			}
		})
	}
}
