package hostcheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

// TestNormalize: configured names and a request's Host compare in one
// form, lower case without IPv6 brackets.
func TestNormalize(t *testing.T) {
	got := Normalize([]string{"Agentbe.Example", "[::1]", "[FE80::1]"})
	if want := []string{"agentbe.example", "::1", "fe80::1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Normalize: %q", got)
	}
	for in, want := range map[string]string{"Agentbe.Example:8080": "agentbe.example", "[FE80::1]:80": "fe80::1", "HOST": "host"} {
		if got := hostname(in); got != want {
			t.Errorf("hostname(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRebinding: on a loopback listener only loopback names and the
// allowed ones pass, in Host and in Origin; on another address nothing is
// checked.
func TestRebinding(t *testing.T) {
	allowed := Normalize([]string{"Agentbe.Internal"})
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3001}
	other := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 3001}
	for _, c := range []struct {
		local        net.Addr
		host, origin string
		want         string
	}{
		{loop, "localhost:3001", "", ""},
		{loop, "127.0.0.1:3001", "http://localhost:3001", ""},
		{loop, "[::1]:3001", "", ""},
		{loop, "agentbe.internal:3001", "http://AGENTBE.internal", ""},
		{loop, "evil.example:3001", "", "Invalid Host header: evil.example:3001"},
		{loop, "localhost:3001", "http://evil.example", "Invalid Origin header: http://evil.example"},
		{loop, "localhost:3001", "::bad", "Invalid Origin header: ::bad"},
		{other, "evil.example:3001", "http://evil.example", ""},
		{nil, "evil.example", "", ""},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Host = c.host
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if c.local != nil {
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, c.local))
		}
		if got := Rebinding(r, allowed); got != c.want {
			t.Errorf("%v %s %s: %q, want %q", c.local, c.host, c.origin, got, c.want)
		}
		if got := OnLoopback(r); got != (c.local == loop) {
			t.Errorf("%v: OnLoopback %v", c.local, got)
		}
	}
}
