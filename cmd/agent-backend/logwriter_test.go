package main

import (
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
	n  int // writes
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return l.b.Write(p)
}

func (l *lockedBuilder) get() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String(), l.n
}

func TestBufferedLog(t *testing.T) {
	var out lockedBuilder
	b := newBufferedLog(&out)
	for i := 0; i < 100; i++ {
		b.Write([]byte("level=INFO msg=http\n"))
	}
	if s, _ := out.get(); s != "" {
		t.Fatal("info lines written at once")
	}
	b.Write([]byte("level=WARN msg=careful\n"))
	s, n := out.get()
	if strings.Count(s, "\n") != 101 || n != 1 {
		t.Errorf("a warning must flush everything in one write: %d lines, %d writes", strings.Count(s, "\n"), n)
	}
	b.Write([]byte("level=INFO msg=later\n"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		if s, _ := out.get(); strings.Contains(s, "later") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("buffered line never flushed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Write([]byte("level=INFO msg=last\n"))
	b.Close()
	if s, _ := out.get(); !strings.HasSuffix(s, "msg=last\n") {
		t.Error("Close did not flush")
	}
}

// TestBufferedLogJSON checks that a JSON line at WARN or ERROR is written
// at once, as a text one is.
func TestBufferedLogJSON(t *testing.T) {
	for _, level := range []string{"WARN", "ERROR"} {
		var out lockedBuilder
		b := newBufferedLog(&out)
		b.Write([]byte(`{"time":"t","level":"INFO","msg":"http"}` + "\n"))
		if s, _ := out.get(); s != "" {
			t.Fatal("info line written at once")
		}
		b.Write([]byte(`{"time":"t","level":"` + level + `","msg":"careful"}` + "\n"))
		if s, n := out.get(); strings.Count(s, "\n") != 2 || n != 1 {
			t.Errorf("%s: %d lines in %d writes", level, strings.Count(s, "\n"), n)
		}
		b.Close()
	}
}
