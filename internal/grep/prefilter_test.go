package grep

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestLiteralPre: the rare-byte search finds what bytes.Index finds, from
// any position, whether its byte is rare in the text or not (the hand-over
// to bytes.Index included).
func TestLiteralPre(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 2000 {
		alphabet := "abcQ"[:1+rng.IntN(4)]
		buf := make([]byte, rng.IntN(300))
		for i := range buf {
			buf[i] = alphabet[rng.IntN(len(alphabet))]
		}
		lit := make([]byte, 1+rng.IntN(5))
		for i := range lit {
			lit[i] = alphabet[rng.IntN(len(alphabet))]
		}
		p := newLiteralPre(lit)
		for from := 0; from <= len(buf); from += 1 + rng.IntN(20) {
			want := bytes.Index(buf[from:], lit)
			if want >= 0 {
				want += from
			}
			if got := p.find(buf, from); got != want {
				t.Fatalf("round %d: %q in %q from %d: got %d, want %d", round, lit, buf, from, got, want)
			}
		}
	}
}
