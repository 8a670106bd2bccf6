package daemon

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync/atomic"
)

// requestInfo is what the daemon knows of one HTTP request, or of one
// /ssh connection and everything its channels do: it rides in the
// request's context, so every log line (contextHandler) and audit record
// of the request carries the same id.
type requestInfo struct {
	// ID is the request's X-Request-Id: the client's when sane
	// (requestID), else a new random one.
	ID string
	// TraceID is the trace id of a valid W3C traceparent header, "" when
	// none was sent.
	TraceID string
	// Remote is the client's address.
	Remote string
	// Route is the route the request was sent to.
	Route route

	scope  atomic.Pointer[string]
	tenant atomic.Pointer[string]
	// body counts the request body's bytes, and idHeader is the value of
	// the response's X-Request-Id: both allocated with the info.
	body     countingBody
	idHeader [1]string
}

// setScope records the scope the request works in ("" is the whole
// workspace); requestBackend calls it.
func (i *requestInfo) setScope(s string) {
	if i != nil && (s != "" || i.scope.Load() != nil) {
		v := s // only this copy escapes: no allocation for ""
		i.scope.Store(&v)
	}
}

// scopeName is the scope recorded by setScope, "" when none.
func (i *requestInfo) scopeName() string {
	if i == nil {
		return ""
	}
	if p := i.scope.Load(); p != nil {
		return *p
	}
	return ""
}

// setTenant records the tenant the request's credential names;
// authentication calls it once it knows.
func (i *requestInfo) setTenant(t string) {
	if i != nil {
		v := t
		i.tenant.Store(&v)
	}
}

// tenantName is the tenant recorded by setTenant, "" when none.
func (i *requestInfo) tenantName() string {
	if i == nil {
		return ""
	}
	if p := i.tenant.Load(); p != nil {
		return *p
	}
	return ""
}

type requestInfoKey struct{}

// withRequestInfo returns ctx carrying info.
func withRequestInfo(ctx context.Context, info *requestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, info)
}

// requestInfoFrom returns the requestInfo ctx carries, or nil.
func requestInfoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return info
}

// RequestID returns the X-Request-Id of the request ctx belongs to (a
// request served by a Server's Handler, or the work of an /ssh
// connection), or "" outside of one.
func RequestID(ctx context.Context) string {
	if info := requestInfoFrom(ctx); info != nil {
		return info.ID
	}
	return ""
}

// maxRequestID bounds the length of a client's X-Request-Id that is kept.
const maxRequestID = 128

// requestID returns the id of a request that sent header as its
// X-Request-Id: header itself when it is 1 to 128 bytes of ASCII letters,
// digits and "-_.:+/=@" (what ids in the wild use, and nothing that needs
// quoting in a log line or could forge one), else a new random id of 32
// hex digits.
func requestID(header string) string {
	if saneRequestID(header) {
		return header
	}
	return newRequestID()
}

func saneRequestID(s string) bool {
	if s == "" || len(s) > maxRequestID {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.:+/=@", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// newRequestID returns 32 random hex digits. Ids need to be unique, not
// secret: math/rand/v2's per-thread generator costs no system call.
func newRequestID() string {
	var b [32]byte
	a, c := rand.Uint64(), rand.Uint64()
	for i := 0; i < 16; i++ {
		b[i] = hexDigit[a>>(60-4*i)&0xf]
		b[16+i] = hexDigit[c>>(60-4*i)&0xf]
	}
	return string(b[:])
}

const hexDigit = "0123456789abcdef"

// parseTraceparent returns the trace id of a W3C Trace Context traceparent
// header ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>"), or ""
// when h is not a valid one: wrong length or separators, upper-case or
// non-hex digits, version ff, an all-zero trace or parent id, or a
// version-00 header with more after the flags. A later version may carry
// more fields after a "-", as the specification allows.
func parseTraceparent(h string) string {
	if len(h) < 55 || h[2] != '-' || h[35] != '-' || h[52] != '-' {
		return ""
	}
	if !lowerHex(h[0:2]) || h[0:2] == "ff" || !lowerHex(h[3:35]) || !lowerHex(h[36:52]) || !lowerHex(h[53:55]) {
		return ""
	}
	if h[0:2] == "00" && len(h) != 55 || len(h) > 55 && h[55] != '-' {
		return ""
	}
	if allZero(h[3:35]) || allZero(h[36:52]) {
		return ""
	}
	return h[3:35]
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func allZero(s string) bool { return strings.Trim(s, "0") == "" }
