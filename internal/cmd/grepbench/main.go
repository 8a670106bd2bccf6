// Command grepbench runs the pure-Go grep (internal/grep) the way rg is run
// in bench/grep.sh, so that both are timed as whole processes, and writes
// the benchmark tree. Not part of the product.
//
//	grepbench -gen DIR [-files N] [-seed S]
//	grepbench [-l|-c] [-i] [-n] [-repeat N] -root DIR PATTERN [PATH]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/agentbe/agent-backend/internal/grep"
	"github.com/agentbe/agent-backend/internal/grep/gentree"
)

func main() {
	gen := flag.String("gen", "", "write the benchmark tree into this directory and exit")
	files := flag.Int("files", 100000, "files to generate")
	seed := flag.Uint64("seed", 1, "generator seed")
	rootDir := flag.String("root", ".", "workspace root")
	l := flag.Bool("l", false, "files with matches")
	c := flag.Bool("c", false, "count")
	i := flag.Bool("i", false, "case-insensitive")
	n := flag.Bool("n", false, "line numbers")
	prof := flag.String("cpuprofile", "", "write a CPU profile")
	memProf := flag.String("memprofile", "", "write an allocation profile")
	repeat := flag.Int("repeat", 1, "run the search this many times; print the mean time per call to stderr")
	flag.Parse()
	if *prof != "" {
		f, err := os.Create(*prof)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if *gen != "" {
		total, err := gentree.Generate(*gen, *files, *seed)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%d files, %d bytes\n", *files, total)
		return
	}
	if flag.NArg() < 1 {
		flag.Usage()
		os.Exit(2)
	}
	root, err := os.OpenRoot(*rootDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	opts := grep.Options{Pattern: flag.Arg(0), Path: flag.Arg(1), Mode: grep.Content, CaseInsensitive: *i, LineNumbers: *n,
		MaxOutputBytes: 1 << 30, Timeout: 1 << 40}
	if *l {
		opts.Mode = grep.FilesWithMatches
	} else if *c {
		opts.Mode = grep.Count
	}
	var res *grep.Result
	start := time.Now()
	for k := 0; k < *repeat; k++ {
		res, err = grep.Search(context.Background(), root, opts)
	}
	if *repeat > 1 {
		fmt.Fprintf(os.Stderr, "%.1f us/call\n", float64(time.Since(start).Microseconds())/float64(*repeat))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, grep.ToolText(err))
		pprof.StopCPUProfile()
		os.Exit(2)
	}
	os.Stdout.WriteString(res.Format())
	os.Stdout.WriteString("\n")
	if *memProf != "" {
		if f, err := os.Create(*memProf); err == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
}
