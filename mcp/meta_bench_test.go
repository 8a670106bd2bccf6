package mcp

import (
	"testing"
)

// BenchmarkRequestMeta: what serving one modern request reads of its
// params._meta (benchModernCall: every member set), from a freshly decoded
// message: the trace context, the era's claim, the envelope check, the
// progress token and the tasks extension, as the transports and the
// Server look at them.
func BenchmarkRequestMeta(b *testing.B) {
	s := NewServer(Implementation{Name: "b", Version: "0"}, ServerOptions{}, nil, nil)
	msg := []byte(benchModernCall)
	b.ReportAllocs()
	for b.Loop() {
		m, err := DecodeMessage(msg)
		if err != nil {
			b.Fatal(err)
		}
		rq := &request{Message: m, trace: traceOf(m)}
		claim, ok := metaClaim(m)
		if !ok || s.parseModern(rq, claim) != nil || progressToken(m) == nil || requestDeclaresTasks(m) || rq.trace == "" {
			b.Fatal("meta not read")
		}
	}
}
