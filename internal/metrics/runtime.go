package metrics

import (
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"sync"
	"time"
)

// RegisterGoRuntime registers the Go runtime's basics under the names
// Prometheus' Go client uses: go_goroutines, go_memstats_heap_alloc_bytes
// (live heap objects), go_memstats_sys_bytes (memory obtained from the
// system), go_gc_heap_goal_bytes, go_gc_cycles_total, go_info{version},
// and, where /proc/self/fd exists, process_open_fds; plus
// process_start_time_seconds. They are read (runtime/metrics, which does
// not stop the world) at each scrape.
func (r *Registry) RegisterGoRuntime() {
	start := float64(time.Now().UnixNano()) / 1e9
	names := []string{
		"/sched/goroutines:goroutines",
		"/memory/classes/heap/objects:bytes",
		"/memory/classes/total:bytes",
		"/gc/heap/goal:bytes",
		"/gc/cycles/total:gc-cycles",
	}
	var mu sync.Mutex
	samples := make([]rtmetrics.Sample, len(names))
	for i, n := range names {
		samples[i].Name = n
	}
	read := func(i int) float64 {
		mu.Lock()
		defer mu.Unlock()
		rtmetrics.Read(samples[i : i+1])
		switch v := samples[i].Value; v.Kind() {
		case rtmetrics.KindUint64:
			return float64(v.Uint64())
		case rtmetrics.KindFloat64:
			return v.Float64()
		}
		return 0
	}
	one := func(i int) func(emit func(float64, ...string)) {
		return func(emit func(float64, ...string)) { emit(read(i)) }
	}
	r.Func("go_goroutines", "Number of goroutines that currently exist.", TypeGauge, nil, one(0))
	r.Func("go_memstats_heap_alloc_bytes", "Bytes of allocated heap objects (live and not yet swept).", TypeGauge, nil, one(1))
	r.Func("go_memstats_sys_bytes", "Bytes of memory obtained from the operating system.", TypeGauge, nil, one(2))
	r.Func("go_gc_heap_goal_bytes", "Heap size target for the end of the GC cycle.", TypeGauge, nil, one(3))
	r.Func("go_gc_cycles_total", "Completed GC cycles.", TypeCounter, nil, one(4))
	r.Func("go_info", "Information about the Go environment.", TypeGauge, []string{"version"},
		func(emit func(float64, ...string)) { emit(1, runtime.Version()) })
	if _, err := os.Stat("/proc/self/fd"); err == nil {
		r.Func("process_open_fds", "Number of open file descriptors.", TypeGauge, nil,
			func(emit func(float64, ...string)) {
				if n, ok := openFDs(); ok {
					emit(float64(n))
				}
			})
	}
	r.Func("process_start_time_seconds", "Start time of the metrics registry since the Unix epoch, in seconds.", TypeGauge, nil,
		func(emit func(float64, ...string)) { emit(start) })
}

// openFDs counts /proc/self/fd's entries (the descriptor reading it
// included, which is subtracted).
func openFDs() (int, bool) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(256)
		n += len(names)
		if err != nil || len(names) == 0 {
			break
		}
	}
	return n - 1, true
}
