package metrics

import (
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Counter is a monotonically increasing count. The zero value is 0.
type Counter struct{ v atomic.Uint64 }

// Inc adds 1.
func (c *Counter) Inc() { c.v.Add(1) }

// Add adds n.
func (c *Counter) Add(n uint64) { c.v.Add(n) }

// Value is the current count.
func (c *Counter) Value() uint64 { return c.v.Load() }

// Gauge is a value that goes up and down. The zero value is 0.
type Gauge struct{ v atomic.Int64 }

// Inc adds 1.
func (g *Gauge) Inc() { g.v.Add(1) }

// Dec subtracts 1.
func (g *Gauge) Dec() { g.v.Add(-1) }

// Add adds n (which may be negative).
func (g *Gauge) Add(n int64) { g.v.Add(n) }

// Set sets the value.
func (g *Gauge) Set(n int64) { g.v.Store(n) }

// Value is the current value.
func (g *Gauge) Value() int64 { return g.v.Load() }

// DefaultBuckets are the upper bounds, in seconds, of a latency histogram
// made with nil buckets: from 1 ms (a cached file read) to 60 s (a long
// command).
var DefaultBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Histogram counts observations in buckets and keeps their sum. Make one
// with Registry.Histogram or HistogramVec.With.
type Histogram struct {
	bounds  []float64       // sorted upper bounds, +Inf excluded
	counts  []atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sumBits atomic.Uint64   // float64 bits of the sum
}

func newHistogram(bounds []float64) *Histogram {
	return &Histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

// Observe records v (seconds, bytes: whatever the family measures). NaN is
// ignored.
func (h *Histogram) Observe(v float64) {
	if math.IsNaN(v) {
		return
	}
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Count is the number of observations.
func (h *Histogram) Count() uint64 {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// Sum is the sum of the observations.
func (h *Histogram) Sum() float64 { return math.Float64frombits(h.sumBits.Load()) }

// vec holds the children of a labelled family, keyed by their label values.
type vec[T any] struct {
	labels []string
	make   func() *T
	m      sync.Map // joined label values -> *child[T]
}

type child[T any] struct {
	values []string
	v      *T
}

// labelSep joins label values into a map key; it cannot occur in a valid
// UTF-8 label value.
const labelSep = "\xff"

func (v *vec[T]) with(values []string) *T {
	if len(values) != len(v.labels) {
		panic("metrics: " + itoa(len(values)) + " label values for " + itoa(len(v.labels)) + " labels")
	}
	key := values[0]
	if len(values) > 1 {
		key = strings.Join(values, labelSep)
	}
	if c, ok := v.m.Load(key); ok {
		return c.(*child[T]).v
	}
	c, _ := v.m.LoadOrStore(key, &child[T]{values: append([]string(nil), values...), v: v.make()})
	return c.(*child[T]).v
}

// children returns the children sorted by label values.
func (v *vec[T]) children() []*child[T] {
	var out []*child[T]
	v.m.Range(func(_, c any) bool {
		out = append(out, c.(*child[T]))
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].values, out[j].values
		for k := range a {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return false
	})
	return out
}

// CounterVec is a family of counters with labels.
type CounterVec struct{ v vec[Counter] }

// With returns the counter of the given label values (in the order of the
// family's label names), creating it at 0 on first use. Keep the result
// when the values are fixed: the lookup joins the values.
func (c *CounterVec) With(values ...string) *Counter { return c.v.with(values) }

// GaugeVec is a family of gauges with labels.
type GaugeVec struct{ v vec[Gauge] }

// With returns the gauge of the given label values; see CounterVec.With.
func (g *GaugeVec) With(values ...string) *Gauge { return g.v.with(values) }

// HistogramVec is a family of histograms with labels, all with the same
// buckets.
type HistogramVec struct{ v vec[Histogram] }

// With returns the histogram of the given label values; see
// CounterVec.With.
func (h *HistogramVec) With(values ...string) *Histogram { return h.v.with(values) }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
