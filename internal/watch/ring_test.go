package watch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func evs(paths ...string) []Event {
	out := make([]Event, len(paths))
	for i, p := range paths {
		out[i] = Event{Op: Created, Path: p, Kind: KindFile}
	}
	return out
}

func seqs(es []Event) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

func TestRingBounds(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name       string
		n, bytes   int
		publish    [][]Event
		after      uint64
		want       []uint64
		tooOld     bool
		wantOldest uint64
	}{
		{"empty", 4, 1 << 20, nil, 0, nil, false, 1},
		{"all kept", 4, 1 << 20, [][]Event{evs("a", "b"), evs("c")}, 0, []uint64{1, 2, 3}, false, 1},
		{"count bound", 3, 1 << 20, [][]Event{evs("a", "b", "c", "d", "e")}, 2, []uint64{3, 4, 5}, false, 3},
		{"count bound, too old", 3, 1 << 20, [][]Event{evs("a", "b", "c", "d", "e")}, 1, nil, true, 3},
		{"ahead", 3, 1 << 20, [][]Event{evs("a")}, 2, nil, true, 1},
		{"byte bound", 100, 2 * (96 + 100), [][]Event{evs(strings.Repeat("x", 100), strings.Repeat("y", 100), strings.Repeat("z", 100))}, 1, []uint64{2, 3}, false, 2},
		{"byte bound keeps the newest", 100, 10, [][]Event{evs("a", strings.Repeat("y", 100))}, 1, []uint64{2}, false, 2},
		{"wraps many times", 4, 1 << 20, [][]Event{evs("a", "b", "c"), evs("d", "e", "f"), evs("g", "h", "i")}, 5, []uint64{6, 7, 8, 9}, false, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRing(tt.n, tt.bytes)
			for _, b := range tt.publish {
				r.publish(now, b)
			}
			got, err := r.since(tt.after, 0)
			if tt.tooOld != errors.Is(err, ErrCursorTooOld) {
				t.Fatalf("since(%d) error %v", tt.after, err)
			}
			if g := seqs(got); len(g) != len(tt.want) || (len(g) > 0 && g[0] != tt.want[0]) || (len(g) > 0 && g[len(g)-1] != tt.want[len(tt.want)-1]) {
				t.Fatalf("since(%d) = %v, want %v", tt.after, g, tt.want)
			}
			if r.oldest() != tt.wantOldest {
				t.Fatalf("oldest %d, want %d", r.oldest(), tt.wantOldest)
			}
			if lim, _ := r.since(tt.after, 1); !tt.tooOld && len(tt.want) > 0 && (len(lim) != 1 || lim[0].Seq != tt.want[0]) {
				t.Fatalf("since with limit 1 = %v", lim)
			}
		})
	}
}

func TestRingWait(t *testing.T) {
	r := newRing(8, 1<<20)
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan []Event)
	go func() {
		e, _ := r.wait(context.Background(), done, 0, 0)
		got <- e
	}()
	r.publish(time.Now(), evs("a"))
	if e := <-got; len(e) != 1 || e[0].Seq != 1 {
		t.Fatalf("wait = %v", e)
	}
	cancel()
	if _, err := r.wait(ctx, done, 1, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait after cancel = %v", err)
	}
	close(done)
	if _, err := r.wait(context.Background(), done, 1, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("wait after done = %v", err)
	}
	r.end(time.Now(), Event{Op: Ended, Path: "."}, ErrRootGone)
	r.publish(time.Now(), evs("late")) // ignored after the end
	e, err := r.wait(context.Background(), make(chan struct{}), 1, 0)
	if err != nil || len(e) != 1 || e[0].Op != Ended || e[0].Seq != 2 {
		t.Fatalf("wait for the end = %v, %v", e, err)
	}
	if _, err := r.wait(context.Background(), make(chan struct{}), 2, 0); !errors.Is(err, ErrRootGone) {
		t.Fatalf("wait after the end = %v", err)
	}
}

func TestEventText(t *testing.T) {
	for o := Created; o <= Ended; o++ {
		b, err := o.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Op
		if err := back.UnmarshalText(b); err != nil || back != o {
			t.Fatalf("%v round trip: %v %v", o, back, err)
		}
	}
	for k := KindNone; k <= KindOther; k++ {
		b, _ := k.MarshalText()
		var back Kind
		if err := back.UnmarshalText(b); err != nil || back != k {
			t.Fatalf("%v round trip: %v %v", k, back, err)
		}
	}
	if _, err := Op(0).MarshalText(); err == nil {
		t.Fatal("Op(0) marshalled")
	}
	var o Op
	if o.UnmarshalText([]byte("bogus")) == nil {
		t.Fatal("bogus op accepted")
	}
}

func TestBudget(t *testing.T) {
	parent := NewBudget(3, nil)
	a, b := NewBudget(2, parent), NewBudget(2, parent)
	if !a.acquire(2) || a.acquire(1) {
		t.Fatal("a's own bound")
	}
	if !b.acquire(1) || b.acquire(1) {
		t.Fatal("the parent's bound")
	}
	if b.Used() != 1 || parent.Used() != 3 {
		t.Fatalf("used %d %d", b.Used(), parent.Used())
	}
	a.release(2)
	if !b.acquire(1) || parent.Used() != 2 {
		t.Fatal("release")
	}
	var none *Budget
	if !none.acquire(1000) {
		t.Fatal("nil budget")
	}
	none.release(1000)
}
