package acp

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func TestRing(t *testing.T) {
	tests := []struct {
		name              string
		maxEvents, maxB   int
		appends           []string
		after             uint64
		wantIDs           []uint64
		wantGap           bool
		wantOldest, wantL uint64
	}{
		{"empty", 4, 100, nil, 0, nil, false, 0, 0},
		{"all", 4, 100, []string{"a", "b"}, 0, []uint64{1, 2}, false, 1, 2},
		{"after", 4, 100, []string{"a", "b", "c"}, 1, []uint64{2, 3}, false, 1, 3},
		{"up to date", 4, 100, []string{"a"}, 1, nil, false, 1, 1},
		{"count eviction", 2, 100, []string{"a", "b", "c"}, 0, []uint64{2, 3}, false, 2, 3},
		{"evicted position", 2, 100, []string{"a", "b", "c", "d"}, 1, []uint64{3, 4}, true, 3, 4},
		{"just kept", 2, 100, []string{"a", "b", "c", "d"}, 2, []uint64{3, 4}, false, 3, 4},
		{"byte eviction", 10, 5, []string{"aaa", "bbb", "c"}, 0, []uint64{2, 3}, false, 2, 3},
		{"oversized single kept", 10, 2, []string{"aaaa"}, 0, []uint64{1}, false, 1, 1},
		{"future id", 4, 100, []string{"a"}, 9, []uint64{1}, true, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRing(tc.maxEvents, tc.maxB)
			for i, a := range tc.appends {
				if id := r.Append([]byte(a)); id != uint64(i+1) {
					t.Fatalf("append %d got id %d", i, id)
				}
			}
			s := r.Since(tc.after)
			var ids []uint64
			for _, e := range s.Events {
				ids = append(ids, e.ID)
			}
			if len(ids) != len(tc.wantIDs) || s.Gap != tc.wantGap || s.Oldest != tc.wantOldest || s.Last != tc.wantL {
				t.Fatalf("got ids %v gap %v oldest %d last %d", ids, s.Gap, s.Oldest, s.Last)
			}
			for i := range ids {
				if ids[i] != tc.wantIDs[i] {
					t.Fatalf("ids %v want %v", ids, tc.wantIDs)
				}
			}
		})
	}
}

func TestRingWakeAndClose(t *testing.T) {
	r := NewRing(4, 1<<10)
	s := r.Since(0)
	r.Append([]byte("x"))
	select {
	case <-s.Wake:
	default:
		t.Fatal("append did not wake")
	}
	s = r.Since(1)
	r.Close()
	select {
	case <-s.Wake:
	default:
		t.Fatal("close did not wake")
	}
	if !r.Since(1).Closed || r.Append([]byte("y")) != 0 {
		t.Fatal("ring usable after Close")
	}
	r.Close() // idempotent
}

func TestParseLastEventID(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"", 0, true}, {"0", 0, true}, {"17", 17, true}, {" 5 ", 5, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"18446744073709551616", 0, false}, {"-1", 0, false}, {"+1", 0, false},
		{"1e3", 0, false}, {"abc", 0, false}, {"0x10", 0, false}, {strings.Repeat("1", 21), 0, false},
	}
	for _, tc := range tests {
		got, err := ParseLastEventID(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseLastEventID(%q) = %d, %v", tc.in, got, err)
		}
	}
}

func FuzzParseLastEventID(f *testing.F) {
	for _, s := range []string{"", "1", "abc", " 42", "18446744073709551616"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseLastEventID(s)
		if err != nil {
			return
		}
		if strings.TrimSpace(s) == "" {
			if n != 0 {
				t.Fatal("empty gave", n)
			}
			return
		}
		if back, _ := strconv.ParseUint(strings.TrimSpace(s), 10, 64); back != n {
			t.Fatalf("%q parsed to %d", s, n)
		}
	})
}

func TestEnvelope(t *testing.T) {
	tests := []struct {
		msg            string
		req, resp, bad bool
		key            string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"a"}`, true, false, false, "n:1"},
		{`{"jsonrpc":"2.0","id":1.0,"result":{}}`, false, true, false, "n:1"},
		{`{"jsonrpc":"2.0","id":"a","error":{}}`, false, true, false, "s:a"},
		{`{"jsonrpc":"2.0","id":"\u0061","result":1}`, false, true, false, "s:a"},
		{`{"jsonrpc":"2.0","method":"n"}`, false, false, false, ""},
		{`{"jsonrpc":"2.0","id":null,"method":"n"}`, false, false, false, ""},
		{`{"jsonrpc":"2.0","method":"_sandboxagent/x","id":3}`, true, false, false, "n:3"},
		{`{"jsonrpc":"2.0","id":3e0,"result":1}`, false, true, false, "n:3"},
		{`{"jsonrpc":"2.0","id":-0,"result":1}`, false, true, false, "n:-0"},
		{`{"jsonrpc":"2.0","id":007,"result":1}`, false, false, true, ""},
		{`{"jsonrpc":"2.0","id":"a\"b","result":1}`, false, true, false, "s:a\"b"},
		{`{"jsonrpc":"2.0","id":12345678901234567,"result":1}`, false, true, false, "n:1.2345678901234568e+16"},
		{`[]`, false, false, true, ""},
		{`"s"`, false, false, true, ""},
		{`{"a":}`, false, false, true, ""},
		{``, false, false, true, ""},
	}
	for _, tc := range tests {
		e, err := parseEnvelope([]byte(tc.msg))
		if (err != nil) != tc.bad {
			t.Errorf("%s: err %v", tc.msg, err)
			continue
		}
		if tc.bad {
			continue
		}
		if e.isRequest() != tc.req || e.isResponse() != tc.resp {
			t.Errorf("%s: request %v response %v", tc.msg, e.isRequest(), e.isResponse())
		}
		if e.ID != nil && idKey(e.ID) != tc.key {
			t.Errorf("%s: key %q", tc.msg, idKey(e.ID))
		}
	}
}

func TestOneLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a": 1}`, `{"a": 1}`}, // untouched, spaces kept: byte for byte
		{"{\n \"a\": \"x\\ny\"\n}", `{"a":"x\ny"}`},
		{"  {\"a\":1}\r\n", `{"a":1}`},
	}
	for _, tc := range tests {
		got, err := oneLine([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("oneLine(%q) = %q, %v", tc.in, got, err)
		}
	}
}

func FuzzEnvelope(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"a"}`))
	f.Add([]byte("{\n\"id\":\"x\"}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := parseEnvelope(b)
		if err != nil {
			return
		}
		if e.ID != nil {
			// The fast path must agree with the decoder.
			if k, ok := fastIDKey(e.ID); ok {
				var v any
				d := json.NewDecoder(bytes.NewReader(e.ID))
				d.UseNumber()
				if d.Decode(&v) == nil {
					want := ""
					switch x := v.(type) {
					case string:
						want = "s:" + x
					case json.Number:
						f, _ := x.Float64()
						want = "n:" + strconv.FormatFloat(f, 'g', -1, 64)
					}
					if k != want {
						t.Fatalf("fast key %q, decoder %q", k, want)
					}
				}
			}
		}
		line, err := oneLine(b)
		if err != nil {
			t.Fatalf("valid object %q not framable: %v", b, err)
		}
		if strings.ContainsAny(string(line), "\r\n") {
			t.Fatalf("framed line %q holds a newline", line)
		}
	})
}

func TestCleanMemberName(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"a.txt", "a.txt", true}, {"./a/b", "a/b", true}, {"a//b/", "a/b", true},
		{"./", "", true}, {".", "", true}, {"a/./b", "a/b", true},
		{"../x", "", false}, {"a/../../x", "", false}, {"a/..", "", false}, {"..", "", false},
		{"/etc/passwd", "", false}, {"//x", "", false}, {"", "", false}, {"a\x00b", "", false},
		{strings.Repeat("a/", maxMemberDepth+1) + "f", "", false},
		{strings.Repeat("a", maxMemberNameBytes+1), "", false},
		{`..\x`, `..\x`, true}, // a backslash is an ordinary byte on Linux
	}
	for _, tc := range tests {
		got, err := CleanMemberName(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("CleanMemberName(%q) = %q, %v", tc.in, got, err)
		}
	}
}

func FuzzCleanMemberName(f *testing.F) {
	for _, s := range []string{"a", "../a", "/a", "a/../b", "./a/./b/", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := CleanMemberName(s)
		if err != nil {
			return
		}
		if strings.HasPrefix(c, "/") || c == ".." || strings.HasPrefix(c, "../") || strings.Contains(c, "/../") ||
			strings.HasSuffix(c, "/..") || strings.IndexByte(c, 0) >= 0 {
			t.Fatalf("%q cleaned to unsafe %q", s, c)
		}
	})
}

func TestRegistry(t *testing.T) {
	a, err := ParseAgentFlag("mine=node .agents/mine.mjs --flag")
	if err != nil || a.ID != "mine" || a.Command != "node .agents/mine.mjs --flag" {
		t.Fatalf("%+v %v", a, err)
	}
	for _, bad := range []string{"noequals", "=cmd", "id=", "bad id=x", "a/b=x"} {
		if _, err := ParseAgentFlag(bad); err == nil {
			t.Errorf("ParseAgentFlag(%q) accepted", bad)
		}
	}
	r := DefaultRegistry()
	if _, ok := r.Get("claude"); !ok {
		t.Fatal("no claude built-in")
	}
	if err := r.Set(a); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Get("mine"); got.Command != a.Command {
		t.Fatal("Set did not add")
	}
	if err := r.Set(Agent{ID: "x", Command: "y", HostEnv: []string{"A=B"}}); err == nil {
		t.Fatal("bad HostEnv accepted")
	}
}

func TestParseAgentsJSON(t *testing.T) {
	good := `[{"id":"mine","command":"node a.mjs","install":"cp x a.mjs","check":"a.mjs","hostEnv":["K"],"env":{"A":"1"}}]`
	agents, err := ParseAgentsJSON([]byte(good))
	if err != nil || len(agents) != 1 || agents[0].HostEnv[0] != "K" || agents[0].Env["A"] != "1" || agents[0].Check != "a.mjs" {
		t.Fatalf("%+v %v", agents, err)
	}
	for _, bad := range []string{`{}`, `[{"id":"x"}]`, `[{"id":"x","command":"y","comand":"z"}]`, `[{"id":"a b","command":"y"}]`, `[`} {
		if _, err := ParseAgentsJSON([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
