package grep

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// Mode is what a search reports.
type Mode string

// The output modes of the tool.
const (
	FilesWithMatches Mode = "files_with_matches" // the paths of matching files (the default)
	Count            Mode = "count"              // path:N, the matching lines per file
	Content          Mode = "content"            // the matching lines
)

// Defaults of the limits in Options.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxOutputBytes = 4 << 20
	DefaultMaxFiles       = 1_000_000
	DefaultMaxLineBytes   = 16 << 20
	DefaultMaxFileBytes   = 64 << 20 // a file searched as a whole (multiline, UTF-16)
)

// Options describe one search. The zero value searches nothing useful
// (an empty pattern matches every line) but is safe: every limit has a
// default.
type Options struct {
	Pattern string
	// Path is the file or directory to search, as the caller gave it:
	// relative to the root, or absolute (a path under RootDir, or else
	// taken as relative). "" (and "-") search the root. Output paths start
	// with it, as ripgrep prints them.
	Path string
	// Glob is one ripgrep --glob: a gitignore-style pattern matched against
	// paths relative to the root ("!" excludes).
	Glob string
	// Type is one ripgrep --type name (see testdata/grep/rg-type-list.txt),
	// or "all".
	Type            string
	Mode            Mode // "" is FilesWithMatches
	CaseInsensitive bool
	// Multiline lets the pattern match across lines; "." then matches a
	// newline too (rg -U --multiline-dotall).
	Multiline bool
	// Before and After are the context lines around matches (content mode
	// only). The tool's contextAround is resolved by the caller: see
	// ResolveContext.
	Before, After int
	LineNumbers   bool // content mode only
	// HeadLimit keeps the first N output lines (0: all) and notes how many
	// more there were.
	HeadLimit int

	// RootDir is the host path of root, to recognise an absolute Path
	// inside it; default root.Name().
	RootDir string

	// Limits; zero means the default.
	Timeout        time.Duration // the whole search
	MaxOutputBytes int           // output text kept
	MaxFiles       int           // files searched
	MaxLineBytes   int           // longest line held in memory
	MaxFileBytes   int64         // files searched as a whole (multiline, UTF-16)
	Workers        int           // files searched at once; default GOMAXPROCS
}

// ResolveContext applies the tool's rule for the context fields: an
// explicit side (even 0) wins over around. nil means not given.
func ResolveContext(before, after, around *int) (int, int) {
	b, a := 0, 0
	if around != nil {
		b, a = *around, *around
	}
	if before != nil {
		b = *before
	}
	if after != nil {
		a = *after
	}
	return max(b, 0), max(a, 0)
}

// FileMatch is one file of the result.
type FileMatch struct {
	Path  string // as printed
	Count int    // matching lines (matches, for a multiline pattern that spans lines)
	Lines []Line // content mode: the lines kept, match and context
	// Binary is set when the file holds a NUL byte: the note ripgrep prints
	// for it (content mode).
	Binary string
}

// Result is the outcome of a search.
type Result struct {
	Mode  Mode
	Files []FileMatch // files with output, in path order
	// Stopped says why the search ended before it was complete ("" if it
	// did not): a limit or the deadline.
	Stopped string
	// Searched counts the files searched.
	Searched int

	opts     Options
	ctxOn    bool
	outLines int // output lines in all, kept or not
	bytes    int // output kept, approximately
}

// Sentinel errors; each error Search returns wraps one.
var (
	// ErrEscape: the path leaves the root (through "..", an absolute path
	// or a link).
	ErrEscape = wspath.ErrEscape
	// ErrNotFound: the path does not exist.
	ErrNotFound = errors.New("no such file or directory")
	// ErrInvalid: the pattern, glob or type is not valid.
	ErrInvalid = errors.New("invalid argument")
)

// PathError is a failure about the searched path, worded as ripgrep words
// it ("nope: No such file or directory (os error 2)").
type PathError struct {
	Path string
	Err  error
}

func (e *PathError) Error() string {
	switch {
	case errors.Is(e.Err, ErrNotFound):
		return e.Path + ": No such file or directory (os error 2)"
	case errors.Is(e.Err, ErrEscape):
		return e.Path + ": path escapes the workspace"
	}
	return e.Path + ": " + e.Err.Error()
}

func (e *PathError) Unwrap() error { return e.Err }

func (e *PatternError) Unwrap() error { return ErrInvalid }
func (e *GlobError) Unwrap() error    { return ErrInvalid }
func (e *TypeError) Unwrap() error    { return ErrInvalid }

// Search runs a search under root.
func Search(ctx context.Context, root *os.Root, opts Options) (*Result, error) {
	if opts.Mode == "" {
		opts.Mode = FilesWithMatches
	}
	switch opts.Mode {
	case FilesWithMatches, Count, Content:
	default:
		return nil, &PatternError{msg: "unknown output mode " + strconv.Quote(string(opts.Mode))}
	}
	if opts.Mode != Content {
		opts.Before, opts.After, opts.LineNumbers = 0, 0, false
	}
	opts.Before, opts.After = max(opts.Before, 0), max(opts.After, 0)
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.RootDir == "" {
		opts.RootDir = root.Name()
	}
	if !strings.HasPrefix(opts.RootDir, "/") {
		opts.RootDir = "/"
	}
	opts.RootDir = path.Clean(opts.RootDir)

	m, err := compilePattern(opts.Pattern, opts.CaseInsensitive, opts.Multiline)
	if err != nil {
		return nil, err
	}
	var over *override
	if opts.Glob != "" {
		if over, err = newOverride(opts.Glob); err != nil {
			return nil, err
		}
	}
	var types *typeMatcher
	if opts.Type != "" {
		if types, err = newTypeMatcher(opts.Type); err != nil {
			return nil, err
		}
	}

	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	s := &search{ctx: ctx, root: root, opts: opts, m: m, over: over, types: types}
	s.res = &Result{Mode: opts.Mode, opts: opts, ctxOn: opts.Before > 0 || opts.After > 0}
	return s.run()
}

type search struct {
	ctx   context.Context
	root  *os.Root
	opts  Options
	m     *matcher
	over  *override
	types *typeMatcher
	res   *Result

	global *ignoreFile
}

// job is one file to search.
type job struct {
	dir     *dirHandle // the directory a walked file is in
	name    string     // its name there
	display string     // the path as printed
	rel     string     // the real path relative to the root
	walked  bool
}

func (s *search) run() (*Result, error) {
	given := s.opts.Path
	var rel string
	if given == "-" {
		return s.res, nil // ripgrep's standard input: nothing to read here
	}
	if given == "" {
		rel = "."
	} else {
		r, err := wspath.Resolve(s.opts.RootDir, given)
		if err != nil {
			return nil, &PathError{Path: given, Err: err}
		}
		real, err := wspath.RealPath(s.root, s.opts.RootDir, r)
		if err != nil {
			if errors.Is(err, wspath.ErrEscape) {
				return nil, &PathError{Path: given, Err: ErrEscape}
			}
			return nil, &PathError{Path: given, Err: err}
		}
		rel = real
	}
	fi, err := s.root.Stat(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, &PathError{Path: given, Err: ErrNotFound}
		}
		return nil, &PathError{Path: given, Err: errors.Unwrap(err)}
	}
	if fi.Mode().IsRegular() {
		s.runJobs(func(emit func(job) bool) {
			emit(job{display: given, rel: rel, walked: false})
		})
		return s.res, nil
	}
	if !fi.IsDir() {
		return s.res, nil // a FIFO, socket or device: nothing to read
	}
	if d, ok := readSmall(s.root, ".config/git/ignore"); ok {
		s.global = parseIgnoreFile(d)
	}
	top := s.dirLevels(rel)
	s.runJobs(func(emit func(job) bool) {
		s.walk(top, rel, given, emit)
	})
	return s.res, nil
}

// jobBatch is how many files travel to a worker together: handing over
// each file alone costs more (goroutine wake-ups) than searching a small
// one.
const jobBatch = 16

// runJobs searches the files produce emits, in parallel, and collects
// the results in order.
func (s *search) runJobs(produce func(emit func(job) bool)) {
	type done struct {
		j job
		r fileResult
	}
	type batch struct {
		seq  int // of the first job
		jobs []job
		res  []done
	}
	jobs := make(chan *batch, 2*s.opts.Workers)
	results := make(chan *batch, 2*s.opts.Workers)
	stop := make(chan struct{})
	var stopOnce sync.Once
	var halted atomic.Bool
	halt := func() { stopOnce.Do(func() { halted.Store(true); close(stop) }) }

	var wg sync.WaitGroup
	for w := 0; w < s.opts.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fsr := s.newFileSearcher()
			defer fsr.release()
			for b := range jobs {
				b.res = make([]done, 0, len(b.jobs))
				for _, j := range b.jobs {
					var r fileResult
					if !halted.Load() {
						r = s.searchFile(fsr, j)
					}
					if j.dir != nil {
						j.dir.release()
					}
					b.res = append(b.res, done{j, r})
				}
				select {
				case results <- b:
				case <-stop:
				}
			}
		}()
	}
	var stopped string
	go func() {
		seq := 0
		cur := &batch{}
		send := func() bool {
			select {
			case jobs <- cur:
				cur = &batch{seq: seq}
				return true
			case <-stop:
			case <-s.ctx.Done():
			}
			for _, j := range cur.jobs {
				if j.dir != nil {
					j.dir.release()
				}
			}
			cur.jobs = nil
			return false
		}
		produce(func(j job) bool {
			if seq >= s.opts.MaxFiles {
				if stopped == "" {
					stopped = "searched the maximum of " + strconv.Itoa(s.opts.MaxFiles) + " files"
				}
				return false
			}
			if j.dir != nil {
				j.dir.acquire()
			}
			if cur.jobs == nil {
				cur.jobs = make([]job, 0, jobBatch)
			}
			cur.jobs = append(cur.jobs, j)
			seq++
			if len(cur.jobs) == jobBatch {
				return send()
			}
			return true
		})
		if len(cur.jobs) > 0 {
			send()
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()

	pending := map[int]*batch{}
	next := 0
	over := false
	for b := range results {
		if over {
			continue
		}
		pending[b.seq] = b
		for !over {
			p, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next += len(p.res)
			for _, d := range p.res {
				if !s.collect(d.j, d.r) {
					over = true
					halt()
					break
				}
			}
		}
	}
	halt()
	if s.res.Stopped == "" {
		if err := s.ctx.Err(); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				s.res.Stopped = "the search took longer than " + s.opts.Timeout.String()
			} else {
				s.res.Stopped = "the search was cancelled"
			}
		} else if stopped != "" {
			s.res.Stopped = stopped
		}
	}
}

func (s *search) newFileSearcher() *fileSearcher {
	keep := 1 << 30
	if s.opts.HeadLimit > 0 {
		keep = s.opts.HeadLimit
	}
	bufs := bufPool.Get().(*searchBufs)
	return &fileSearcher{
		ctx: s.ctx, m: s.m.clone(), mode: s.opts.Mode, before: s.opts.Before, after: s.opts.After,
		lineNumbers: s.opts.LineNumbers, maxLine: s.opts.MaxLineBytes, maxMulti: s.opts.MaxFileBytes,
		keepLines: keep, keepBytes: s.opts.MaxOutputBytes,
		head: bufs.head, buf: bufs.buf,
	}
}

// searchBufs are a worker's read buffers, reused across searches (a small
// search would otherwise spend much of its time allocating them).
type searchBufs struct{ head, buf []byte }

var bufPool = sync.Pool{New: func() any {
	return &searchBufs{head: make([]byte, blockSize), buf: make([]byte, blockSize)}
}}

// release returns the buffers to the pool, unless a long line grew one.
func (fs *fileSearcher) release() {
	if cap(fs.buf) == blockSize && len(fs.head) == blockSize {
		bufPool.Put(&searchBufs{head: fs.head, buf: fs.buf[:0]})
	}
	fs.head, fs.buf = nil, nil
}

// searchFile opens one file through the root (never following a link out
// of it, never blocking on a FIFO) and searches it.
func (s *search) searchFile(fsr *fileSearcher, j job) fileResult {
	if s.ctx.Err() != nil {
		return fileResult{err: s.ctx.Err()}
	}
	if j.dir != nil {
		return s.searchInDir(fsr, j.dir, j.name, j.walked)
	}
	f, err := s.root.OpenFile(j.rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return fileResult{err: err}
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fileResult{}
	}
	return fsr.search(f, j.walked)
}

// collect adds one file's result in path order; false stops the search.
func (s *search) collect(j job, r fileResult) bool {
	res := s.res
	res.Searched++
	if r.err != nil && s.ctx.Err() != nil {
		return false
	}
	if r.note != "" && res.Stopped == "" {
		res.Stopped = j.display + " was not searched to its end (" + r.note + ")"
	}
	if !r.matched || (res.Mode == Count && r.suppress) {
		return true
	}
	fm := FileMatch{Path: j.display, Count: r.count}
	lines := 1
	switch res.Mode {
	case Content:
		lines = r.outLines
		if r.binary != 0 {
			lines++
			fm.Binary = binaryNote(r)
		}
		if res.ctxOn && res.outLines > 0 {
			lines++ // "--" between files
		}
		fm.Lines = r.lines
	}
	res.outLines += lines
	res.Files = append(res.Files, fm)
	res.bytes += len(fm.Path) + 8
	for _, l := range fm.Lines {
		res.bytes += len(fm.Path) + len(l.Text) + 12
	}
	if res.bytes > s.opts.MaxOutputBytes {
		res.Stopped = "the output reached " + strconv.Itoa(s.opts.MaxOutputBytes) + " bytes"
		return false
	}
	return true
}

func binaryNote(r fileResult) string {
	off := strconv.FormatInt(r.binOffset, 10)
	if r.binary == 1 {
		return `WARNING: stopped searching binary file after match (found "\0" byte around offset ` + off + `)`
	}
	return `binary file matches (found "\0" byte around offset ` + off + `)`
}
