// Package hostcheck is the DNS-rebinding check of the HTTP servers: a web
// page whose name an attacker made resolve to 127.0.0.1 reaches a loopback
// listener with its own name in Host and Origin, and is refused. The MCP
// Streamable HTTP handler applies it (unless told a wrapping handler does),
// and the daemon's Host/Origin guard applies it to every route.
package hostcheck

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Normalize puts host names in the form Rebinding compares: lower case,
// without IPv6 brackets.
func Normalize(hosts []string) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = normalize(h)
	}
	return out
}

// normalize is one name of Normalize.
func normalize(h string) string { return strings.ToLower(strings.Trim(h, "[]")) }

// OnLoopback reports whether r arrived on a loopback address (the local
// address net/http puts in the request's context).
func OnLoopback(r *http.Request) bool {
	la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return la != nil && isLoopbackAddr(la)
}

// Rebinding reports why r must be refused as a DNS-rebinding attempt: it
// arrived on a loopback listener, but its Host or Origin names neither a
// loopback host nor one of allowed (names as Normalize gives them). The
// answer is the official MCP SDK's 403 message; "" lets r through, as it
// does every request that arrived on another address.
func Rebinding(r *http.Request, allowed []string) string {
	if !OnLoopback(r) {
		return ""
	}
	if !hostAllowed(hostname(r.Host), allowed) {
		return "Invalid Host header: " + r.Host
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !hostAllowed(strings.ToLower(u.Hostname()), allowed) {
			return "Invalid Origin header: " + origin
		}
	}
	return ""
}

func isLoopbackAddr(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return normalize(h)
	}
	return normalize(hostport)
}

func hostAllowed(name string, allowed []string) bool {
	if name == "localhost" {
		return true
	}
	if ip := net.ParseIP(name); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range allowed {
		if a == name {
			return true
		}
	}
	return false
}
