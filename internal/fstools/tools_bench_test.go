package fstools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func benchTools(b *testing.B, files map[string]string) map[string]toolFunc {
	dir, h := newTestTools(b)
	writeFiles(b, dir, files)
	return h
}

func runBench(b *testing.B, h toolFunc, args string) {
	raw := json.RawMessage(args)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := h(ctx, raw)
		if err != nil || res.IsError {
			b.Fatalf("%v %v", err, res)
		}
	}
}

func BenchmarkReadTextFile1K(b *testing.B) {
	h := benchTools(b, map[string]string{"r.txt": strings.Repeat("0123456789abcde\n", 64)})
	runBench(b, h["read_text_file"], `{"path":"r.txt"}`)
}

// BenchmarkTail10Of64MiB reads 10 lines from the end of a 64 MiB file: the
// cost must not grow with the file.
func BenchmarkTail10Of64MiB(b *testing.B) {
	h := benchTools(b, map[string]string{"big.txt": strings.Repeat(strings.Repeat("x", 63)+"\n", 1<<20)})
	runBench(b, h["read_text_file"], `{"path":"big.txt","tail":10}`)
}

func BenchmarkListDirectory100(b *testing.B) {
	files := map[string]string{}
	for i := 0; i < 100; i++ {
		files[fmt.Sprintf("d/f%03d.txt", i)] = "x"
	}
	h := benchTools(b, files)
	runBench(b, h["list_directory"], `{"path":"d"}`)
}

func BenchmarkSearchFiles1000(b *testing.B) {
	files := map[string]string{}
	for i := 0; i < 1000; i++ {
		files[fmt.Sprintf("s/d%02d/f%03d.go", i%20, i)] = "x"
	}
	h := benchTools(b, files)
	runBench(b, h["search_files"], `{"path":"s","pattern":"**/*7.go"}`)
}

func BenchmarkEditFileDryRun(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&sb, "line %d of the file\n", i)
	}
	h := benchTools(b, map[string]string{"e.txt": sb.String()})
	runBench(b, h["edit_file"], `{"path":"e.txt","dryRun":true,"edits":[{"oldText":"line 1000 of","newText":"LINE 1000 of"}]}`)
}
