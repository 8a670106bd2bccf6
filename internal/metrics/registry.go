package metrics

import (
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"sync"
)

// ContentType is the media type of the text exposition format 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Type is a family's metric type, as its # TYPE line says.
type Type string

// The metric types this package writes.
const (
	TypeCounter   Type = "counter"
	TypeGauge     Type = "gauge"
	TypeHistogram Type = "histogram"
)

// Registry is a set of metric families, written in registration order.
// Register everything before serving; registration panics on an invalid or
// duplicate name, a programming error.
type Registry struct {
	mu    sync.Mutex
	fams  []*family
	names map[string]bool
}

type family struct {
	name, help string
	typ        Type
	labels     []string
	// samples appends the family's sample lines.
	samples func(b []byte, f *family) []byte
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{names: map[string]bool{}} }

func (r *Registry) add(f *family) {
	if !validName(f.name) {
		panic("metrics: invalid metric name " + strconv.Quote(f.name))
	}
	for _, l := range f.labels {
		if !validLabelName(l) || l == "le" {
			panic("metrics: invalid label name " + strconv.Quote(l) + " of " + f.name)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.names[f.name] {
		panic("metrics: duplicate metric " + f.name)
	}
	r.names[f.name] = true
	r.fams = append(r.fams, f)
}

// Counter registers and returns a counter without labels.
func (r *Registry) Counter(name, help string) *Counter {
	c := new(Counter)
	r.add(&family{name: name, help: help, typ: TypeCounter, samples: func(b []byte, f *family) []byte {
		return appendSample(b, f.name, nil, nil, float64(c.Value()))
	}})
	return c
}

// CounterVec registers a counter family with the given label names.
func (r *Registry) CounterVec(name, help string, labels ...string) *CounterVec {
	c := &CounterVec{v: vec[Counter]{labels: labels, make: func() *Counter { return new(Counter) }}}
	r.add(&family{name: name, help: help, typ: TypeCounter, labels: labels, samples: func(b []byte, f *family) []byte {
		for _, ch := range c.v.children() {
			b = appendSample(b, f.name, f.labels, ch.values, float64(ch.v.Value()))
		}
		return b
	}})
	return c
}

// Gauge registers and returns a gauge without labels.
func (r *Registry) Gauge(name, help string) *Gauge {
	g := new(Gauge)
	r.add(&family{name: name, help: help, typ: TypeGauge, samples: func(b []byte, f *family) []byte {
		return appendSample(b, f.name, nil, nil, float64(g.Value()))
	}})
	return g
}

// GaugeVec registers a gauge family with the given label names.
func (r *Registry) GaugeVec(name, help string, labels ...string) *GaugeVec {
	g := &GaugeVec{v: vec[Gauge]{labels: labels, make: func() *Gauge { return new(Gauge) }}}
	r.add(&family{name: name, help: help, typ: TypeGauge, labels: labels, samples: func(b []byte, f *family) []byte {
		for _, ch := range g.v.children() {
			b = appendSample(b, f.name, f.labels, ch.values, float64(ch.v.Value()))
		}
		return b
	}})
	return g
}

// Func registers a family of type typ whose samples collect emits at each
// scrape: one call of emit per sample, with as many label values as labels
// has names. Use it for values read from elsewhere (the Go runtime, a
// count another package keeps); collect must be quick and safe for
// concurrent use. A histogram cannot be made this way.
func (r *Registry) Func(name, help string, typ Type, labels []string, collect func(emit func(v float64, values ...string))) {
	if typ == TypeHistogram {
		panic("metrics: Func cannot make a histogram")
	}
	r.add(&family{name: name, help: help, typ: typ, labels: labels, samples: func(b []byte, f *family) []byte {
		collect(func(v float64, values ...string) {
			if len(values) != len(f.labels) {
				panic("metrics: wrong number of label values for " + f.name)
			}
			b = appendSample(b, f.name, f.labels, values, v)
		})
		return b
	}})
}

// Histogram registers and returns a histogram without labels; nil buckets
// means DefaultBuckets. Buckets must be sorted ascending.
func (r *Registry) Histogram(name, help string, buckets []float64) *Histogram {
	buckets = checkBuckets(buckets)
	h := newHistogram(buckets)
	r.add(&family{name: name, help: help, typ: TypeHistogram, samples: func(b []byte, f *family) []byte {
		return appendHistogram(b, f.name, nil, nil, h)
	}})
	return h
}

// HistogramVec registers a histogram family with the given label names;
// nil buckets means DefaultBuckets.
func (r *Registry) HistogramVec(name, help string, buckets []float64, labels ...string) *HistogramVec {
	buckets = checkBuckets(buckets)
	h := &HistogramVec{v: vec[Histogram]{labels: labels, make: func() *Histogram { return newHistogram(buckets) }}}
	r.add(&family{name: name, help: help, typ: TypeHistogram, labels: labels, samples: func(b []byte, f *family) []byte {
		for _, ch := range h.v.children() {
			b = appendHistogram(b, f.name, f.labels, ch.values, ch.v)
		}
		return b
	}})
	return h
}

func checkBuckets(b []float64) []float64 {
	if b == nil {
		b = DefaultBuckets
	}
	if !sort.Float64sAreSorted(b) {
		panic("metrics: buckets not sorted")
	}
	for i, v := range b {
		if math.IsNaN(v) || math.IsInf(v, 0) || (i > 0 && v == b[i-1]) {
			panic("metrics: invalid bucket bound")
		}
	}
	return append([]float64(nil), b...)
}

// AppendText appends every family in the text exposition format.
func (r *Registry) AppendText(b []byte) []byte {
	r.mu.Lock()
	fams := append([]*family(nil), r.fams...)
	r.mu.Unlock()
	for _, f := range fams {
		b = append(b, "# HELP "...)
		b = append(b, f.name...)
		b = append(b, ' ')
		b = appendEscaped(b, f.help, false)
		b = append(b, "\n# TYPE "...)
		b = append(b, f.name...)
		b = append(b, ' ')
		b = append(b, f.typ...)
		b = append(b, '\n')
		b = f.samples(b, f)
	}
	return b
}

// WriteTo writes every family to w in the text exposition format.
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(r.AppendText(make([]byte, 0, 8<<10)))
	return int64(n), err
}

// ServeHTTP answers a scrape: the families as ContentType. It does not
// authenticate; the caller decides who may scrape.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	b := r.AppendText(make([]byte, 0, 8<<10))
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Header().Set("Cache-Control", "no-store")
	if req.Method == http.MethodGet {
		w.Write(b)
	}
}

func appendSample(b []byte, name string, labels, values []string, v float64) []byte {
	b = append(b, name...)
	b = appendLabels(b, labels, values, "", "")
	b = append(b, ' ')
	b = appendFloat(b, v)
	return append(b, '\n')
}

func appendHistogram(b []byte, name string, labels, values []string, h *Histogram) []byte {
	var cum uint64
	for i := range h.counts {
		cum += h.counts[i].Load()
		le := "+Inf"
		if i < len(h.bounds) {
			le = strconv.FormatFloat(h.bounds[i], 'g', -1, 64)
		}
		b = append(b, name...)
		b = append(b, "_bucket"...)
		b = appendLabels(b, labels, values, "le", le)
		b = append(b, ' ')
		b = strconv.AppendUint(b, cum, 10)
		b = append(b, '\n')
	}
	b = append(b, name...)
	b = append(b, "_sum"...)
	b = appendLabels(b, labels, values, "", "")
	b = append(b, ' ')
	b = appendFloat(b, h.Sum())
	b = append(b, '\n')
	b = append(b, name...)
	b = append(b, "_count"...)
	b = appendLabels(b, labels, values, "", "")
	b = append(b, ' ')
	b = strconv.AppendUint(b, cum, 10)
	return append(b, '\n')
}

// appendLabels appends {l1="v1",…}, with extra (e.g. le) last when set;
// nothing when there are no labels.
func appendLabels(b []byte, labels, values []string, extra, extraValue string) []byte {
	if len(labels) == 0 && extra == "" {
		return b
	}
	b = append(b, '{')
	for i, l := range labels {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, l...)
		b = append(b, `="`...)
		b = appendEscaped(b, values[i], true)
		b = append(b, '"')
	}
	if extra != "" {
		if len(labels) > 0 {
			b = append(b, ',')
		}
		b = append(b, extra...)
		b = append(b, `="`...)
		b = append(b, extraValue...)
		b = append(b, '"')
	}
	return append(b, '}')
}

// appendEscaped escapes a label value (backslash, double quote, line feed)
// or a HELP text (backslash and line feed only).
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// validName reports whether s matches [a-zA-Z_:][a-zA-Z0-9_:]*.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// validLabelName reports whether s matches [a-zA-Z_][a-zA-Z0-9_]* and
// does not start with the reserved "__".
func validLabelName(s string) bool {
	if s == "" || len(s) >= 2 && s[:2] == "__" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9' {
			continue
		}
		return false
	}
	return true
}
