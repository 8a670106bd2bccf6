package watch

import (
	"context"
	"encoding/binary"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// rawInotify is the comparison: one inotify watch on a directory, read
// directly, nothing else.
type rawInotify struct {
	fd  int
	buf []byte
}

func newRawInotify(b *testing.B, dir string) *rawInotify {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, watchMask); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Close(fd) })
	return &rawInotify{fd: fd, buf: make([]byte, readBufSize)}
}

// until reads events until fn returns true for one (by name and mask).
func (r *rawInotify) until(b *testing.B, fn func(name string, mask uint32) bool) {
	for {
		n, err := unix.Read(r.fd, r.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		for buf := r.buf[:n]; len(buf) >= unix.SizeofInotifyEvent; {
			mask := binary.NativeEndian.Uint32(buf[4:])
			nlen := int(binary.NativeEndian.Uint32(buf[12:]))
			name := buf[unix.SizeofInotifyEvent : unix.SizeofInotifyEvent+nlen]
			if i := indexNUL(name); i >= 0 {
				name = name[:i]
			}
			buf = buf[unix.SizeofInotifyEvent+nlen:]
			if fn(string(name), mask) {
				return
			}
		}
	}
}

// BenchmarkLatency measures the time from writing a file (open, write,
// close of an existing file not written recently) to the event's
// delivery: through a feed to a subscriber blocked in Next, and with a
// bare inotify read of the same directory, in one run. ns/op is the whole
// cycle; p50-µs and p99-µs are the write-to-delivery latencies.
func BenchmarkLatency(b *testing.B) {
	for _, mode := range []string{"raw-inotify", "feed"} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			r, err := os.OpenRoot(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			names := make([]string, b.N)
			for i := range names {
				names[i] = strconv.Itoa(i)
				if err := os.WriteFile(join(dir, names[i]), nil, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			var raw *rawInotify
			var sub *Subscription
			if mode == "feed" {
				f, err := Open(r, ".", nil)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				sub = f.Subscribe(f.Seq())
			} else {
				raw = newRawInotify(b, dir)
			}
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			data := []byte("payload\n")
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if err := os.WriteFile(join(dir, names[i]), data, 0o644); err != nil {
					b.Fatal(err)
				}
				if raw != nil {
					raw.until(b, func(name string, mask uint32) bool {
						return mask&unix.IN_CLOSE_WRITE != 0 && name == names[i]
					})
				} else {
					for {
						e, err := sub.Next(ctx)
						if err != nil {
							b.Fatal(err)
						}
						if e.Op == Written && e.Path == names[i] {
							break
						}
					}
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
		})
	}
}

// BenchmarkThroughput measures how fast events are taken in and delivered,
// apart from how fast they are made: with the reader stopped, files are
// created in batches of 4,000 (two kernel events each: IN_CREATE and
// IN_CLOSE_WRITE, 8,000 of the kernel's 16,384 queued by default), then
// the timer runs while the reader drains the queue and a subscriber
// receives every creation. One op is one file. Side by side: a bare
// inotify read of the same events, a feed with the default bounds (Rate
// 20,000 events/s) and a feed without a rate bound. kevents/s counts
// kernel events taken in per second; files/s, Created events delivered.
// The ring is enlarged (RingSize) because the subscriber, which also
// creates the files, reads nothing meanwhile.
func BenchmarkThroughput(b *testing.B) {
	modes := []struct {
		name string
		cfg  *Config
	}{
		{"raw-inotify", nil},
		{"feed-default", &Config{RingSize: 1 << 16}},
		{"feed-unbounded", &Config{Rate: 1 << 30, RingSize: 1 << 16}},
	}
	const batch = 4000
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			dir := b.TempDir()
			r, err := os.OpenRoot(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			var raw *rawInotify
			var sub *Subscription
			gate := new(sync.Mutex)
			if m.name == "raw-inotify" {
				raw = newRawInotify(b, dir)
			} else {
				testHooks.beforeRead = func() { gate.Lock(); gate.Unlock() }
				f, err := Open(r, ".", m.cfg)
				testHooks.beforeRead = nil
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				sub = f.Subscribe(0)
			}
			ctx := context.Background()
			var elapsed time.Duration
			rescans := 0
			b.ResetTimer()
			b.StopTimer()
			for done := 0; done < b.N; {
				n := min(batch, b.N-done)
				gate.Lock()
				for i := range n {
					fd, err := unix.Open(join(dir, strconv.Itoa(done+i)), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
					if err != nil {
						b.Fatal(err)
					}
					unix.Close(fd)
				}
				last := strconv.Itoa(done + n - 1)
				b.StartTimer()
				start := time.Now()
				gate.Unlock()
				if raw != nil {
					raw.until(b, func(name string, mask uint32) bool {
						if mask&unix.IN_Q_OVERFLOW != 0 {
							rescans++
							return true
						}
						return mask&unix.IN_CLOSE_WRITE != 0 && name == last
					})
				} else {
					for {
						e, err := sub.Next(ctx)
						if err != nil {
							b.Fatal(err)
						}
						if e.Op == Rescan {
							rescans++
							break
						}
						if e.Op == Created && e.Path == last {
							break
						}
					}
				}
				elapsed += time.Since(start)
				b.StopTimer()
				done += n
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "files/s")
			b.ReportMetric(2*float64(b.N)/elapsed.Seconds(), "kevents/s")
			b.ReportMetric(float64(rescans), "rescans")
		})
	}
}

// BenchmarkIdleFeed reports what an idle feed holds: heap and stack bytes,
// descriptors and goroutines per feed, for a tree of 11 directories and
// 100 files, with nothing happening. One op opens and closes 16 feeds
// (inotify instances are limited per user, 128 by default).
func BenchmarkIdleFeed(b *testing.B) {
	dir := b.TempDir()
	for i := range 10 {
		d := join(dir, strconv.Itoa(i))
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for j := range 10 {
			os.WriteFile(join(d, strconv.Itoa(j)), nil, 0o644)
		}
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	const n = 16
	var heap, stack, fds, gs float64
	for range b.N {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		fd0, g0 := countFDs(b), runtime.NumGoroutine()
		feeds := make([]*Feed, n)
		for i := range feeds {
			if feeds[i], err = Open(r, ".", nil); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(10 * time.Millisecond) // let the readers park
		runtime.GC()
		runtime.ReadMemStats(&m1)
		heap += float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / n
		stack += float64(int64(m1.StackInuse)-int64(m0.StackInuse)) / n
		fds += float64(countFDs(b)-fd0) / n
		gs += float64(runtime.NumGoroutine()-g0) / n
		for _, f := range feeds {
			f.Close()
		}
	}
	b.ReportMetric(heap/float64(b.N), "heap-B/feed")
	b.ReportMetric(stack/float64(b.N), "stack-B/feed")
	b.ReportMetric(fds/float64(b.N), "fds/feed")
	b.ReportMetric(gs/float64(b.N), "goroutines/feed")
}
