package sftpjail

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// TestOnChange checks that every request that changes the tree is
// reported once answered, with its paths and outcome, and that reads are
// not.
func TestOnChange(t *testing.T) {
	var mu sync.Mutex
	var got []string
	opts := &ServerOptions{OnChange: func(c Change) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s %s %s %d %v", c.Op, c.Path, c.Path2, c.Bytes, c.OK))
	}}
	dir := tempDir(t)
	c := newClientFor(t, dir, opts)
	ctx := context.Background()
	f, err := c.Create(ctx, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := c.Open(ctx, "a.txt") // read-only: not a change
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	steps := []error{
		c.Mkdir(ctx, "d", 0o755),
		c.Rename(ctx, "a.txt", "d/b.txt"),
		c.Chmod(ctx, "d/b.txt", 0o600),
		c.Symlink(ctx, "b.txt", "d/l"),
		c.Remove(ctx, "d/l"),
		c.Remove(ctx, "missing"),
		c.Remove(ctx, "d/b.txt"),
		c.RemoveDir(ctx, "d"),
	}
	for i, err := range steps {
		if err != nil && i != 5 {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	want := []string{
		"write a.txt  5 true",
		"mkdir d  0 true",
		"rename a.txt d/b.txt 0 true",
		"setstat d/b.txt  0 true",
		"symlink d/l b.txt 0 true",
		"remove d/l  0 true",
		"remove missing  0 false",
		"remove d/b.txt  0 true",
		"rmdir d  0 true",
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("changes:\n got %q\nwant %q", got, want)
	}
}
