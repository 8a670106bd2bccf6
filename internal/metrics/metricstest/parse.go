// Package metricstest checks text in the Prometheus text exposition format
// 0.0.4 strictly, for tests: a scrape that passes Parse is one a
// Prometheus server ingests.
package metricstest

import (
	"bufio"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Sample is one sample line.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Family is a metric family: its # HELP and # TYPE and its samples.
type Family struct {
	Name, Help, Type string
	Samples          []Sample
}

// Scrape is a parsed exposition.
type Scrape map[string]*Family

// Value returns the value of the sample named name whose labels include
// every pair of labels (given as name, value, name, value…), and whether
// exactly one matched.
func (s Scrape) Value(name string, labels ...string) (float64, bool) {
	var got []float64
	for _, f := range s {
		for _, smp := range f.Samples {
			if smp.Name != name {
				continue
			}
			ok := true
			for i := 0; i+1 < len(labels); i += 2 {
				if smp.Labels[labels[i]] != labels[i+1] {
					ok = false
				}
			}
			if ok {
				got = append(got, smp.Value)
			}
		}
	}
	if len(got) != 1 {
		return 0, false
	}
	return got[0], true
}

// Parse checks text strictly and returns its families. It refuses: a
// line that is not a comment, a blank line or a sample; a sample whose
// family has no # TYPE before it; two # TYPE or # HELP lines for one
// family; a family's samples not contiguous; invalid names, label syntax
// or escapes; a value that does not parse; the same series twice; a
// counter below zero; a histogram whose buckets are not cumulative, lack
// le="+Inf", or whose +Inf bucket differs from _count, or that lacks _sum
// or _count; a missing final line feed.
func Parse(text string) (Scrape, error) {
	if text != "" && !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("exposition does not end with a line feed")
	}
	fams := Scrape{}
	var cur *Family
	done := map[string]bool{} // families whose samples ended
	helped := map[string]bool{}
	seen := map[string]bool{} // series
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	ln := 0
	for sc.Scan() {
		ln++
		line := sc.Text()
		fail := func(format string, a ...any) error {
			return fmt.Errorf("line %d %q: %s", ln, line, fmt.Sprintf(format, a...))
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			fields := strings.SplitN(line, " ", 4)
			if len(fields) < 3 || fields[0] != "#" || (fields[1] != "HELP" && fields[1] != "TYPE") {
				continue // an ordinary comment
			}
			name := fields[2]
			if !validName(name) {
				return nil, fail("invalid metric name")
			}
			f := fams[name]
			if f == nil {
				if done[name] {
					return nil, fail("family appears twice")
				}
				f = &Family{Name: name}
				fams[name] = f
			}
			if cur != nil && cur != f {
				done[cur.Name] = true
			}
			cur = f
			rest := ""
			if len(fields) == 4 {
				rest = fields[3]
			}
			if fields[1] == "HELP" {
				if helped[name] {
					return nil, fail("second HELP")
				}
				helped[name] = true
				h, err := unescape(rest, false)
				if err != nil {
					return nil, fail("%v", err)
				}
				f.Help = h
				continue
			}
			if f.Type != "" {
				return nil, fail("second TYPE")
			}
			if len(f.Samples) > 0 {
				return nil, fail("TYPE after samples")
			}
			switch rest {
			case "counter", "gauge", "histogram", "summary", "untyped":
			default:
				return nil, fail("invalid type")
			}
			f.Type = rest
			continue
		}
		smp, err := parseSample(line)
		if err != nil {
			return nil, fail("%v", err)
		}
		base := familyOf(smp.Name, fams)
		f := fams[base]
		if f == nil || f.Type == "" {
			return nil, fail("sample without a TYPE line for its family")
		}
		if f != cur {
			return nil, fail("samples of family %s not contiguous", base)
		}
		if f.Type != "histogram" && smp.Name != base {
			return nil, fail("sample name does not match its family")
		}
		key := seriesKey(smp)
		if seen[key] {
			return nil, fail("duplicate series")
		}
		seen[key] = true
		if f.Type == "counter" && (smp.Value < 0 || math.IsNaN(smp.Value)) {
			return nil, fail("counter below zero")
		}
		f.Samples = append(f.Samples, smp)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, f := range fams {
		if f.Type == "" {
			return nil, fmt.Errorf("family %s has HELP but no TYPE", f.Name)
		}
		if f.Type == "histogram" {
			if err := checkHistogram(f); err != nil {
				return nil, err
			}
		}
	}
	return fams, nil
}

// familyOf is the family a sample belongs to: its own name, or for a
// histogram's _bucket, _sum and _count the name without the suffix.
func familyOf(name string, fams Scrape) string {
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, suf); ok {
			if f := fams[b]; f != nil && f.Type == "histogram" {
				return b
			}
		}
	}
	return name
}

func seriesKey(s Sample) string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(s.Name)
	for _, k := range keys {
		b.WriteString("\xff" + k + "\xfe" + s.Labels[k])
	}
	return b.String()
}

func checkHistogram(f *Family) error {
	type series struct {
		buckets    map[float64]float64
		sum, count *float64
	}
	all := map[string]*series{}
	get := func(s Sample) *series {
		l := map[string]string{}
		for k, v := range s.Labels {
			if k != "le" {
				l[k] = v
			}
		}
		k := seriesKey(Sample{Labels: l})
		if all[k] == nil {
			all[k] = &series{buckets: map[float64]float64{}}
		}
		return all[k]
	}
	for _, s := range f.Samples {
		v := s.Value
		switch s.Name {
		case f.Name + "_bucket":
			le, ok := s.Labels["le"]
			if !ok {
				return fmt.Errorf("%s: bucket without le", f.Name)
			}
			bound, err := strconv.ParseFloat(le, 64)
			if err != nil {
				return fmt.Errorf("%s: invalid le %q", f.Name, le)
			}
			get(s).buckets[bound] = v
		case f.Name + "_sum":
			get(s).sum = &v
		case f.Name + "_count":
			get(s).count = &v
		default:
			return fmt.Errorf("%s: unexpected sample %s", f.Name, s.Name)
		}
	}
	for _, s := range all {
		if s.sum == nil || s.count == nil {
			return fmt.Errorf("%s: histogram without _sum or _count", f.Name)
		}
		inf, ok := s.buckets[math.Inf(1)]
		if !ok {
			return fmt.Errorf(`%s: histogram without le="+Inf"`, f.Name)
		}
		if inf != *s.count {
			return fmt.Errorf("%s: +Inf bucket %v != count %v", f.Name, inf, *s.count)
		}
		bounds := make([]float64, 0, len(s.buckets))
		for b := range s.buckets {
			bounds = append(bounds, b)
		}
		sort.Float64s(bounds)
		for i := 1; i < len(bounds); i++ {
			if s.buckets[bounds[i]] < s.buckets[bounds[i-1]] {
				return fmt.Errorf("%s: buckets not cumulative", f.Name)
			}
		}
	}
	return nil
}

// parseSample parses `name{l="v",…} value [timestamp]`.
func parseSample(line string) (Sample, error) {
	i := 0
	for i < len(line) && line[i] != '{' && line[i] != ' ' {
		i++
	}
	s := Sample{Name: line[:i], Labels: map[string]string{}}
	if !validName(s.Name) {
		return s, fmt.Errorf("invalid metric name %q", s.Name)
	}
	if i < len(line) && line[i] == '{' {
		i++
		for {
			if i < len(line) && line[i] == '}' {
				i++
				break
			}
			j := i
			for j < len(line) && line[j] != '=' {
				j++
			}
			name := line[i:j]
			if !validLabelName(name) {
				return s, fmt.Errorf("invalid label name %q", name)
			}
			if j+1 >= len(line) || line[j+1] != '"' {
				return s, fmt.Errorf("label %s: value not quoted", name)
			}
			k := j + 2
			for k < len(line) && line[k] != '"' {
				if line[k] == '\\' {
					k++
				}
				k++
			}
			if k >= len(line) {
				return s, fmt.Errorf("label %s: unterminated value", name)
			}
			v, err := unescape(line[j+2:k], true)
			if err != nil {
				return s, err
			}
			if _, dup := s.Labels[name]; dup {
				return s, fmt.Errorf("label %s twice", name)
			}
			s.Labels[name] = v
			i = k + 1
			if i < len(line) && line[i] == ',' {
				i++
				continue
			}
			if i < len(line) && line[i] == '}' {
				i++
				break
			}
			return s, fmt.Errorf("expected , or } after label %s", name)
		}
	}
	if i >= len(line) || line[i] != ' ' {
		return s, fmt.Errorf("no value")
	}
	fields := strings.Split(line[i+1:], " ")
	if len(fields) < 1 || len(fields) > 2 {
		return s, fmt.Errorf("expected value [timestamp]")
	}
	v, err := parseValue(fields[0])
	if err != nil {
		return s, err
	}
	s.Value = v
	if len(fields) == 2 {
		if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
			return s, fmt.Errorf("invalid timestamp %q", fields[1])
		}
	}
	return s, nil
}

func parseValue(f string) (float64, error) {
	switch f {
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(f, 64)
	if err != nil || strings.ContainsAny(f, "xXpP_") || strings.EqualFold(f, "inf") || strings.EqualFold(f, "infinity") {
		return 0, fmt.Errorf("invalid value %q", f)
	}
	return v, nil
}

// unescape undoes the escapes of a label value (\\, \", \n) or of a HELP
// text (\\, \n); any other backslash sequence, and a raw line feed, is an
// error.
func unescape(s string, label bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\n' {
			return "", fmt.Errorf("raw line feed")
		}
		if label && c == '"' {
			return "", fmt.Errorf("unescaped double quote")
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			return "", fmt.Errorf("trailing backslash")
		}
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case '"':
			if !label {
				return "", fmt.Errorf(`\" in HELP`)
			}
			b.WriteByte('"')
		default:
			return "", fmt.Errorf("invalid escape \\%c", s[i])
		}
	}
	return b.String(), nil
}

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

func validLabelName(s string) bool {
	if s == "" {
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
