package grep

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/grep/gentree"
)

// benchTree returns the 100,000-file tree of bench/grep.sh (generated
// once, kept in $BENCH_SCRATCH, default /tmp/agentbe-bench-grep).
func benchTree(b *testing.B, files int) string {
	scratch := os.Getenv("BENCH_SCRATCH")
	if scratch == "" {
		scratch = "/tmp/agentbe-bench-grep"
	}
	dir := filepath.Join(scratch, "tree-"+strconv.Itoa(files))
	if _, err := os.Stat(filepath.Join(dir, ".done")); err != nil {
		os.RemoveAll(dir)
		if _, err := gentree.Generate(dir, files, 1); err != nil {
			b.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, ".done"), nil, 0o644)
	}
	return dir
}

// peakHeap samples the live heap while f runs.
func peakHeap(f func()) uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(done)
	return peak.Load()
}

type benchCase struct {
	name   string
	rgArgs []string
	opts   Options
}

var treeCases = []benchCase{
	{"literal-files", []string{"-l", "--", "ErrTimeout", "."}, Options{Pattern: "ErrTimeout", Path: "."}},
	{"literal-content", []string{"-n", "--", "ErrTimeout", "."}, Options{Pattern: "ErrTimeout", Path: ".", Mode: Content, LineNumbers: true}},
	{"common-count", []string{"-c", "--", "return", "."}, Options{Pattern: "return", Path: ".", Mode: Count}},
	{"insensitive-files", []string{"-i", "-l", "--", "errtimeout", "."}, Options{Pattern: "errtimeout", Path: ".", CaseInsensitive: true}},
	{"regex-count", []string{"-c", "--", `func \w+Close\w*\(`, "."}, Options{Pattern: `func \w+Close\w*\(`, Path: ".", Mode: Count}},
	{"regex-noliteral-count", []string{"-c", "--", `[A-Z][a-z]+[0-9]{3}`, "."}, Options{Pattern: `[A-Z][a-z]+[0-9]{3}`, Path: ".", Mode: Count}},
}

// runRG runs rg in dir and returns its peak RSS in bytes.
func runRG(b *testing.B, dir string, args []string) uint64 {
	cmd := exec.Command("rg", append([]string{"--color=never", "--no-heading", "--with-filename"}, args...)...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			b.Fatal(err)
		}
	}
	return uint64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) << 10
}

// BenchmarkTree100k: ours and rg side by side on the 100,000-file tree,
// alternating within the loop. Reports both times, the ratio, our peak
// live heap and rg's peak RSS.
func BenchmarkTree100k(b *testing.B) {
	if _, err := exec.LookPath("rg"); err != nil {
		b.Skip("no rg (apt-get install -y ripgrep)")
	}
	dir := benchTree(b, 100000)
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	for _, c := range treeCases {
		b.Run(c.name, func(b *testing.B) {
			var ours, theirs time.Duration
			var heap, rss uint64
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				rss = max(rss, runRG(b, dir, c.rgArgs))
				t1 := time.Now()
				heap = max(heap, peakHeap(func() {
					opts := c.opts
					opts.MaxOutputBytes, opts.Timeout = 1<<30, time.Hour
					if _, err := Search(context.Background(), root, opts); err != nil {
						b.Fatal(err)
					}
				}))
				t2 := time.Now()
				theirs += t1.Sub(t0)
				ours += t2.Sub(t1)
			}
			n := float64(b.N)
			b.ReportMetric(float64(ours.Nanoseconds())/n, "ours-ns/op")
			b.ReportMetric(float64(theirs.Nanoseconds())/n, "rg-ns/op")
			b.ReportMetric(float64(ours)/float64(theirs), "ratio")
			b.ReportMetric(float64(heap)/(1<<20), "ours-peak-heap-MB")
			b.ReportMetric(float64(rss)/(1<<20), "rg-peak-rss-MB")
		})
	}
}

// BenchmarkSmallTree: one call on a small tree, in process, against
// spawning rg for it (directly and through bash, as the reference does).
func BenchmarkSmallTree(b *testing.B) {
	dir := b.TempDir()
	for i := 0; i < 20; i++ {
		os.MkdirAll(filepath.Join(dir, "src", "sub"), 0o755)
		os.WriteFile(filepath.Join(dir, "src", "f"+strconv.Itoa(i)+".go"), []byte("package x\n\nfunc F() error {\n\treturn ErrTimeout\n}\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "src", "sub", "n"+strconv.Itoa(i)+".txt"), []byte("nothing here\n"), 0o644)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			res, err := Search(context.Background(), root, Options{Pattern: "ErrTimeout", Path: "src", Workers: runtime.GOMAXPROCS(0)})
			if err != nil || len(res.Files) != 20 {
				b.Fatal(err)
			}
		}
	})
	if _, err := exec.LookPath("rg"); err != nil {
		return
	}
	b.Run("rg-spawn", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			runRG(b, dir, []string{"-l", "--", "ErrTimeout", "src"})
		}
	})
	b.Run("bash-rg-spawn", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			cmd := exec.Command("bash", "-c", "rg '--color=never' '--no-heading' '--with-filename' '-l' '--' 'ErrTimeout' 'src' || [ $? -eq 1 ]")
			cmd.Dir = dir
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchText is about 4 MB of the benchmark tree's source-like text.
func benchText(b testing.TB) []byte {
	dir := b.TempDir()
	if _, err := gentree.Generate(dir, 1000, 1); err != nil {
		b.Fatal(err)
	}
	var text []byte
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			text = append(text, data...)
		}
		return nil
	})
	return text
}

// BenchmarkCountLines: the matching lines of a buffer of source-like
// text, per pattern (the engine alone, no files).
func BenchmarkCountLines(b *testing.B) {
	text := benchText(b)
	// the same with non-ASCII words in its comments
	utf := bytes.ReplaceAll(bytes.ReplaceAll(text, []byte(" the "), []byte(" 的 ")), []byte(" of "), []byte(" τοῦ "))
	for _, c := range []struct {
		pat  string
		text []byte
	}{{`[A-Z][a-z]+[0-9]{3}`, text}, {`return`, text}, {`func \w+Close\w*\(`, text}, {`\b[a-z]+_[a-z]+\b`, text},
		{`[a-z]+\d+`, text}, {`^\s+\}$`, text}, {`^\s*[A-Z]\w+\d`, text}, {`[A-Z][a-z]+[0-9]{3}`, utf}, {`\b[A-Z][a-z]+[0-9]{3}\b`, utf}} {
		pat, text := c.pat, c.text
		name := pat
		if &text[0] == &utf[0] {
			name += "/utf8"
		}
		b.Run(name, func(b *testing.B) {
			m, err := compilePattern(pat, false, false)
			if err != nil {
				b.Fatal(err)
			}
			m = m.clone()
			b.SetBytes(int64(len(text)))
			n := 0
			// The machine may be shared: report this thread's CPU time too.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			for i := 0; i < b.N; i++ {
				n = 0
				for pos := 0; pos < len(text); {
					_, le, ok := m.nextLine(text, pos)
					if !ok {
						break
					}
					n++
					pos = le + 1
				}
			}
			cpu := threadCPU() - cpu0
			b.ReportMetric(float64(n), "lines")
			b.ReportMetric(float64(len(text))*float64(b.N)/cpu.Seconds()/1e6, "cpu-MB/s")
		})
	}
}

// threadCPU is the CPU time of the calling thread (user and system).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
