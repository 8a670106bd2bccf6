package agentbe

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Benchmarks compare the backends with the plain standard library doing the
// same work. Targets (issue 2): Local Read/Write within 1.5x of
// os.ReadFile/os.WriteFile, Local Exec("true") within 1.3x of a bare
// exec.Command("bash", "-c", "true"). Local.Write is atomic (temporary file
// + rename), so BenchmarkOSAtomicWrite* is the like-for-like baseline for it.

const (
	ct1K = 1 << 10
	ct1M = 1 << 20
)

func ctPayload(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func benchLocalRead(b *testing.B, size int) {
	l := ctLocal(b, LocalConfig{})
	ctx := context.Background()
	if err := l.Write(ctx, "f.bin", ctPayload(size)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Read(ctx, "f.bin"); err != nil {
			b.Fatal(err)
		}
	}
}

func benchOSReadFile(b *testing.B, size int) {
	p := filepath.Join(b.TempDir(), "f.bin")
	if err := os.WriteFile(p, ctPayload(size), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	}
}

func benchLocalWrite(b *testing.B, size int) {
	l := ctLocal(b, LocalConfig{})
	ctx := context.Background()
	data := ctPayload(size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Write(ctx, "f.bin", data); err != nil {
			b.Fatal(err)
		}
	}
}

func benchOSWriteFile(b *testing.B, size int) {
	p := filepath.Join(b.TempDir(), "f.bin")
	data := ctPayload(size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// benchOSAtomicWrite is what an atomic replacement costs with the os
// package alone: create a uniquely named sibling, write, close, rename.
func benchOSAtomicWrite(b *testing.B, size int) {
	dir := b.TempDir()
	p := filepath.Join(dir, "f.bin")
	data := ctPayload(size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		var r [8]byte
		rand.Read(r[:])
		tmp := filepath.Join(dir, ".f.bin."+hex.EncodeToString(r[:])+".tmp")
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLocalRead1K(b *testing.B)       { benchLocalRead(b, ct1K) }
func BenchmarkLocalRead1M(b *testing.B)       { benchLocalRead(b, ct1M) }
func BenchmarkOSReadFile1K(b *testing.B)      { benchOSReadFile(b, ct1K) }
func BenchmarkOSReadFile1M(b *testing.B)      { benchOSReadFile(b, ct1M) }
func BenchmarkLocalWrite1K(b *testing.B)      { benchLocalWrite(b, ct1K) }
func BenchmarkLocalWrite1M(b *testing.B)      { benchLocalWrite(b, ct1M) }
func BenchmarkOSWriteFile1K(b *testing.B)     { benchOSWriteFile(b, ct1K) }
func BenchmarkOSWriteFile1M(b *testing.B)     { benchOSWriteFile(b, ct1M) }
func BenchmarkOSAtomicWrite1K(b *testing.B)   { benchOSAtomicWrite(b, ct1K) }
func BenchmarkOSAtomicWrite1M(b *testing.B)   { benchOSAtomicWrite(b, ct1M) }
func BenchmarkScopeRead1K(b *testing.B)       { benchScopeRead(b, ct1K) }
func BenchmarkScopeWrite1K(b *testing.B)      { benchScopeWrite(b, ct1K) }
func BenchmarkMemoryGet(b *testing.B)         { benchMemoryGet(b, 0) }
func BenchmarkMemoryGet10kKeys(b *testing.B)  { benchMemoryGet(b, 10000) }
func BenchmarkMemoryPut(b *testing.B)         { benchMemoryPut(b, 0) }
func BenchmarkMemoryPut10kKeys(b *testing.B)  { benchMemoryPut(b, 10000) }
func BenchmarkLocalExecTrue(b *testing.B)     { benchLocalExec(b, IsolationNone) }
func BenchmarkLocalExecTrueSoft(b *testing.B) { benchLocalExec(b, IsolationSoftware) }

func benchScopeRead(b *testing.B, size int) {
	l := ctLocal(b, LocalConfig{})
	s := ctScope(b, l, "users/u1")
	ctx := context.Background()
	if err := s.Write(ctx, "f.bin", ctPayload(size)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Read(ctx, "f.bin"); err != nil {
			b.Fatal(err)
		}
	}
}

func benchScopeWrite(b *testing.B, size int) {
	l := ctLocal(b, LocalConfig{})
	s := ctScope(b, l, "users/u1")
	ctx := context.Background()
	data := ctPayload(size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Write(ctx, "f.bin", data); err != nil {
			b.Fatal(err)
		}
	}
}

// ctMemoryWithKeys returns a Memory holding n other keys in 100 directories.
func ctMemoryWithKeys(b *testing.B, n int) *Memory {
	init := make(map[string][]byte, n+1)
	for i := range n {
		init[fmt.Sprintf("dir%d/key%d", i%100, i)] = []byte("v")
	}
	init["k"] = ctPayload(ct1K)
	return ctMemory(b, MemoryConfig{Initial: init})
}

func benchMemoryGet(b *testing.B, others int) {
	m := ctMemoryWithKeys(b, others)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Read(ctx, "k"); err != nil {
			b.Fatal(err)
		}
	}
}

func benchMemoryPut(b *testing.B, others int) {
	m := ctMemoryWithKeys(b, others)
	ctx := context.Background()
	data := ctPayload(ct1K)
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Write(ctx, "k", data); err != nil {
			b.Fatal(err)
		}
	}
}

func benchLocalExec(b *testing.B, iso Isolation) {
	l := ctLocal(b, LocalConfig{Isolation: iso, AllowDangerous: true, Shell: ShellBash})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Exec(ctx, "true", ExecOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBareExecTrue(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareExecTrueCollect is the bare baseline that also collects
// stdout and stderr (as Exec does), which costs two pipes and two copying
// goroutines per command.
func BenchmarkBareExecTrueCollect(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", "-c", "true")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPaired runs ours and the baseline alternately in the same loop
// and reports each one's mean time per operation plus their ratio. On a
// loaded machine this is far steadier than comparing separate benchmarks,
// because both sides see the same background load.
func BenchmarkPaired(b *testing.B) {
	ctx := context.Background()
	type pair struct {
		name     string
		ours     func(b *testing.B) func()
		baseline func(b *testing.B) func()
	}
	localRead := func(size int) func(b *testing.B) func() {
		return func(b *testing.B) func() {
			l := ctLocal(b, LocalConfig{})
			if err := l.Write(ctx, "f.bin", ctPayload(size)); err != nil {
				b.Fatal(err)
			}
			return func() {
				if _, err := l.Read(ctx, "f.bin"); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	osRead := func(size int) func(b *testing.B) func() {
		return func(b *testing.B) func() {
			p := filepath.Join(b.TempDir(), "f.bin")
			if err := os.WriteFile(p, ctPayload(size), 0o644); err != nil {
				b.Fatal(err)
			}
			return func() {
				if _, err := os.ReadFile(p); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	localWrite := func(size int) func(b *testing.B) func() {
		return func(b *testing.B) func() {
			l := ctLocal(b, LocalConfig{})
			data := ctPayload(size)
			return func() {
				if err := l.Write(ctx, "f.bin", data); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	osWrite := func(size int) func(b *testing.B) func() {
		return func(b *testing.B) func() {
			p := filepath.Join(b.TempDir(), "f.bin")
			data := ctPayload(size)
			return func() {
				if err := os.WriteFile(p, data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	osAtomicWrite := func(size int) func(b *testing.B) func() {
		return func(b *testing.B) func() {
			dir := b.TempDir()
			p := filepath.Join(dir, "f.bin")
			data := ctPayload(size)
			return func() {
				var r [8]byte
				rand.Read(r[:])
				tmp := filepath.Join(dir, ".f.bin."+hex.EncodeToString(r[:])+".tmp")
				f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				f.Write(data)
				f.Close()
				if err := os.Rename(tmp, p); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	localExec := func(iso Isolation) func(b *testing.B) func() {
		return func(b *testing.B) func() {
			l := ctLocal(b, LocalConfig{Isolation: iso, AllowDangerous: true, Shell: ShellBash})
			return func() {
				if _, err := l.Exec(ctx, "true", ExecOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	bareExec := func(b *testing.B) func() {
		return func() {
			if err := exec.Command("bash", "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The TypeScript reference's bwrap argv (as in BenchmarkSpawnFloor
	// "bwrap-ref-bash"), on a workspace of its own.
	bareBwrap := func(b *testing.B) func() {
		argv := append(append([]string{"bwrap"}, bwrapRefArgs(b.TempDir())...), "bash", "-c", "true")
		return func() {
			if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
				b.Fatal(err)
			}
		}
	}
	pairs := []pair{
		{"Read1K", localRead(ct1K), osRead(ct1K)},
		{"Read1M", localRead(ct1M), osRead(ct1M)},
		{"Write1K-vs-WriteFile", localWrite(ct1K), osWrite(ct1K)},
		{"Write1M-vs-WriteFile", localWrite(ct1M), osWrite(ct1M)},
		{"Write1K-vs-atomic", localWrite(ct1K), osAtomicWrite(ct1K)},
		{"Write1M-vs-atomic", localWrite(ct1M), osAtomicWrite(ct1M)},
		{"ExecTrue-none", localExec(IsolationNone), bareExec},
		{"ExecTrue-software", localExec(IsolationSoftware), bareExec},
		{"ExecTrue-bwrap", localExec(IsolationBwrap), bareBwrap},
	}
	for _, p := range pairs {
		b.Run(p.name, func(b *testing.B) {
			if p.name == "ExecTrue-bwrap" {
				requireBwrap(b)
			}
			ours, base := p.ours(b), p.baseline(b)
			ours()
			base()
			var tOurs, tBase time.Duration
			n := 0
			for b.Loop() {
				t0 := time.Now()
				ours()
				t1 := time.Now()
				base()
				tBase += time.Since(t1)
				tOurs += t1.Sub(t0)
				n++
			}
			b.ReportMetric(float64(tOurs.Nanoseconds())/float64(n), "ours-ns/op")
			b.ReportMetric(float64(tBase.Nanoseconds())/float64(n), "base-ns/op")
			b.ReportMetric(float64(tOurs)/float64(tBase), "ratio")
		})
	}
}
