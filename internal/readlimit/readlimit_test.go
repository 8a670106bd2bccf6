package readlimit

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// grower yields n zero bytes whatever its size hint said.
type grower struct{ n int }

func (g *grower) Read(p []byte) (int, error) {
	if g.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), g.n)
	clear(p[:k])
	g.n -= k
	return k, nil
}

func TestReadAll(t *testing.T) {
	for _, tc := range []struct {
		name        string
		n           int   // bytes the stream holds
		size, limit int64 // hint and limit
		wantSize    int64 // TooLarge.Size, or 0 for success
	}{
		{"at the limit", 1000, 1000, 1000, 0},
		{"unsized at the limit", 1000, -1, 1000, 0},
		{"empty", 0, 0, 10, 0},
		{"hint over the limit", 1, 1001, 1000, 1001},
		{"unsized over the limit", 1001, -1, 1000, -1},
		{"grows past its hint", 5000, 10, 1000, -1},
		{"sparse hint within the limit", 10, 900, 1000, 0},
		{"sparse hint far over the limit", 10, 1 << 40, 1000, 1 << 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ReadAll(&grower{tc.n}, tc.size, tc.limit)
			var tl *TooLarge
			switch {
			case tc.wantSize == 0 && (err != nil || len(b) != tc.n):
				t.Fatalf("%d bytes, %v", len(b), err)
			case tc.wantSize != 0 && (!errors.As(err, &tl) || tl.Size != tc.wantSize || tl.Limit != tc.limit || b != nil):
				t.Fatalf("%d bytes, %v (%+v)", len(b), err, tl)
			case tc.wantSize == 0 && tc.size > 0 && tc.n < int(tc.size) && cap(b) != int(tc.size)+1:
				t.Fatalf("first buffer of %d bytes for a hint of %d", cap(b), tc.size)
			}
		})
	}
	boom := errors.New("boom")
	if _, err := ReadAll(io.MultiReader(bytes.NewReader([]byte("x")), &failing{boom}), -1, 10); err != boom {
		t.Fatalf("read error: %v", err)
	}
}

type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }
