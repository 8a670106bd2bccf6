package metrics

import (
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentbe/agent-backend/internal/metrics/metricstest"
)

func TestExpositionRoundTrip(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("t_events_total", "Events.\nSecond line with a \\ backslash.")
	cv := r.CounterVec("t_requests_total", "Requests by route and code.", "route", "code")
	g := r.Gauge("t_open", "Open things.")
	h := r.Histogram("t_duration_seconds", "Durations.", []float64{0.1, 1})
	hv := r.HistogramVec("t_route_seconds", "By route.", nil, "route")
	r.Func("t_info", "Info.", TypeGauge, []string{"v"}, func(emit func(float64, ...string)) { emit(1, `a"b\c`+"\n") })
	r.RegisterGoRuntime()

	c.Add(3)
	cv.With("mcp", "200").Inc()
	cv.With("mcp", "200").Inc()
	cv.With("ssh", "101").Inc()
	g.Inc()
	g.Inc()
	g.Dec()
	for _, v := range []float64{0.05, 0.1, 0.5, 5, math.NaN()} {
		h.Observe(v)
	}
	hv.With("mcp").Observe(0.002)

	text := string(r.AppendText(nil))
	s, err := metricstest.Parse(text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	want := []struct {
		name   string
		labels []string
		v      float64
	}{
		{"t_events_total", nil, 3},
		{"t_requests_total", []string{"route", "mcp", "code", "200"}, 2},
		{"t_requests_total", []string{"route", "ssh", "code", "101"}, 1},
		{"t_open", nil, 1},
		{"t_duration_seconds_bucket", []string{"le", "0.1"}, 2},
		{"t_duration_seconds_bucket", []string{"le", "1"}, 3},
		{"t_duration_seconds_bucket", []string{"le", "+Inf"}, 4},
		{"t_duration_seconds_count", nil, 4},
		{"t_duration_seconds_sum", nil, 5.65},
		{"t_route_seconds_count", []string{"route", "mcp"}, 1},
		{"t_info", []string{"v", `a"b\c` + "\n"}, 1},
		{"go_info", nil, 1},
	}
	for _, w := range want {
		got, ok := s.Value(w.name, w.labels...)
		if !ok || math.Abs(got-w.v) > 1e-9 {
			t.Errorf("%s%v = %v (found %v), want %v", w.name, w.labels, got, ok, w.v)
		}
	}
	if s["t_events_total"].Help != "Events.\nSecond line with a \\ backslash." {
		t.Errorf("help = %q", s["t_events_total"].Help)
	}
	if g, ok := s.Value("go_goroutines"); !ok || g < 1 {
		t.Errorf("go_goroutines = %v, %v", g, ok)
	}
	if _, ok := s.Value("go_memstats_heap_alloc_bytes"); !ok {
		t.Error("no go_memstats_heap_alloc_bytes")
	}
}

func TestServeHTTP(t *testing.T) {
	r := NewRegistry()
	r.Counter("x_total", "X.").Inc()
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); ct != ContentType {
		t.Errorf("Content-Type = %q", ct)
	}
	if _, err := metricstest.Parse(rec.Body.String()); err != nil {
		t.Error(err)
	}
	rec = httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest("POST", "/metrics", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}

func TestRegistrationPanics(t *testing.T) {
	for name, f := range map[string]func(r *Registry){
		"bad name":       func(r *Registry) { r.Counter("1abc", "") },
		"dash":           func(r *Registry) { r.Counter("a-b", "") },
		"duplicate":      func(r *Registry) { r.Counter("a", ""); r.Gauge("a", "") },
		"le label":       func(r *Registry) { r.HistogramVec("h", "", nil, "le") },
		"reserved label": func(r *Registry) { r.CounterVec("c", "", "__x") },
		"unsorted":       func(r *Registry) { r.Histogram("h", "", []float64{2, 1}) },
		"wrong arity":    func(r *Registry) { r.CounterVec("c", "", "a", "b").With("x") },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f(NewRegistry())
		})
	}
}

func TestConcurrentUpdates(t *testing.T) {
	r := NewRegistry()
	cv := r.CounterVec("c_total", "C.", "k")
	h := r.Histogram("h_seconds", "H.", nil)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 1000; j++ {
				cv.With([]string{"a", "b"}[j%2]).Inc()
				h.Observe(0.5)
				if j%100 == 0 {
					if _, err := metricstest.Parse(string(r.AppendText(nil))); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if a, b := cv.With("a").Value(), cv.With("b").Value(); a+b != 8000 {
		t.Errorf("counts %d+%d", a, b)
	}
	if h.Count() != 8000 || h.Sum() != 4000 {
		t.Errorf("histogram %d %v", h.Count(), h.Sum())
	}
}

func TestUpdatesAllocateNothing(t *testing.T) {
	r := NewRegistry()
	c := r.CounterVec("c_total", "C.", "k").With("a")
	h := r.HistogramVec("h_seconds", "H.", nil, "k").With("a")
	if n := testing.AllocsPerRun(100, func() { c.Inc(); h.Observe(0.01) }); n != 0 {
		t.Errorf("%v allocations per update", n)
	}
}

// TestParserRefuses checks that the test parser rejects what Prometheus
// would, so that the tests above prove something.
func TestParserRefuses(t *testing.T) {
	for name, text := range map[string]string{
		"no type":          "x 1\n",
		"no final newline": "# TYPE x counter\nx 1",
		"bad value":        "# TYPE x counter\nx one\n",
		"negative counter": "# TYPE x counter\nx -1\n",
		"bad label":        "# TYPE x counter\nx{a=1} 1\n",
		"bad escape":       "# TYPE x counter\nx{a=\"\\t\"} 1\n",
		"duplicate":        "# TYPE x counter\nx{a=\"1\"} 1\nx{a=\"1\"} 2\n",
		"split family":     "# TYPE x counter\nx 1\n# TYPE y gauge\ny 1\nx{a=\"2\"} 1\n",
		"two types":        "# TYPE x counter\n# TYPE x gauge\nx 1\n",
		"no inf bucket":    "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
		"not cumulative":   "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n",
		"count mismatch":   "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",
		"no sum":           "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 2\n",
		"bad name":         "# TYPE x-y counter\n",
		"unterminated":     "# TYPE x counter\nx{a=\"1} 1\n",
	} {
		if _, err := metricstest.Parse(text); err == nil {
			t.Errorf("%s: accepted %q", name, text)
		}
	}
	if _, err := metricstest.Parse("# HELP x X.\n# TYPE x counter\nx{a=\"\\\"q\\n\"} 1 1700000000000\n"); err != nil {
		t.Errorf("valid text refused: %v", err)
	}
}
