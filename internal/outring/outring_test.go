package outring

import (
	"context"
	"errors"
	"testing"
)

// TestRing: entries are numbered across streams from 1; past the budget
// the oldest go, and a reader from before them learns how many it missed;
// an entry larger than the ring keeps its tail; after Close nothing is
// added and a follower ends once it has read everything.
func TestRing(t *testing.T) {
	r := New(10)
	r.Add("stdout", []byte("abcd"))
	r.Add("stderr", []byte("efgh"))
	r.Add("stdout", nil) // empty: not an entry
	r.Add("stdout", []byte("ijkl"))
	got := read(t, r, 0, false)
	if len(got) != 2 || got[0].Seq != 2 || got[0].Dropped != 1 || got[0].Stream != "stderr" || got[1].Seq != 3 || got[1].Dropped != 0 {
		t.Fatalf("after the budget: %+v", got)
	}
	if got := read(t, r, 2, false); len(got) != 1 || string(got[0].Data) != "ijkl" || got[0].Dropped != 0 {
		t.Fatalf("from seq 2: %+v", got)
	}
	r.Add("pty", []byte("0123456789XY"))
	if got := read(t, r, 3, false); len(got) != 1 || string(got[0].Data) != "23456789XY" || got[0].Seq != 4 {
		t.Fatalf("an entry over the budget: %+v", got)
	}
	r.Close()
	r.Add("stdout", []byte("late"))
	if got := read(t, r, 0, true); len(got) != 1 || got[0].Seq != 4 || got[0].Dropped != 3 {
		t.Fatalf("follow after Close: %+v", got)
	}
}

// TestRingFollow: a follower waits for new entries and ends at Close; a
// cancelled one returns the context's error; fn's error stops the read.
func TestRingFollow(t *testing.T) {
	r := New(1 << 10)
	done := make(chan []Entry)
	go func() {
		var got []Entry
		err := r.Read(context.Background(), 0, true, func(e Entry) error { got = append(got, e); return nil })
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	r.Add("stdout", []byte("a"))
	r.Add("stdout", []byte("b"))
	r.Close()
	if got := <-done; len(got) != 2 || string(got[1].Data) != "b" {
		t.Fatalf("followed %+v", got)
	}

	open := New(1 << 10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := open.Read(ctx, 0, true, func(Entry) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled follow: %v", err)
	}
	stop := errors.New("stop")
	open.Add("stdout", []byte("x"))
	if err := open.Read(context.Background(), 0, true, func(Entry) error { return stop }); err != stop {
		t.Fatalf("fn's error: %v", err)
	}
}

func read(t *testing.T, r *Ring, since uint64, follow bool) []Entry {
	t.Helper()
	var got []Entry
	if err := r.Read(context.Background(), since, follow, func(e Entry) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	return got
}
