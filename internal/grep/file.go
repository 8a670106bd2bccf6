package grep

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// blockSize is ripgrep's read buffer: binary detection looks at each block
// as it is read, before it is searched.
const blockSize = 64 << 10

// Line is one line of content output.
type Line struct {
	Number int    // 1-based
	Text   []byte // without its terminator
	Match  bool   // false: a context line
	Gap    bool   // a "--" separator comes before it (lines skipped in this file)
}

// fileResult is what searching one file gave.
type fileResult struct {
	matched bool
	count   int
	lines   []Line
	// outLines counts the content lines (kept or not) and separators
	// within the file, for the head limit.
	outLines int
	// binary: 1 stopped at a NUL after a match (walked file), 2 an explicit
	// file with a NUL near its start that matched.
	binary    int
	binOffset int64
	// suppress: a count that ripgrep does not print (a walked binary file)
	suppress bool
	note     string // why this file was not searched to its end
	err      error
}

type fileSearcher struct {
	ctx         context.Context
	m           *matcher
	mode        Mode
	before      int
	after       int
	lineNumbers bool
	maxLine     int
	maxMulti    int64
	keepLines   int // content lines stored per file (the rest only counted)
	keepBytes   int

	buf  []byte
	head []byte
	pre  prefixReader
}

var errEOF = io.EOF

// prefixReader yields head, then what r has left.
type prefixReader struct {
	head []byte
	r    io.Reader
	done bool
}

func (p *prefixReader) Read(b []byte) (int, error) {
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	if p.done {
		return 0, io.EOF
	}
	return p.r.Read(b)
}

// search reads r (a walked file when walked, else an explicitly named
// one) and reports its matches. A UTF-8 byte order mark is dropped and
// UTF-16 with a byte order mark is transcoded to UTF-8, as ripgrep does.
func (s *fileSearcher) search(r io.Reader, walked bool) fileResult {
	if s.head == nil {
		s.head = make([]byte, blockSize)
	}
	n, err := io.ReadAtLeast(r, s.head, 1)
	if n == 0 {
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return fileResult{err: err}
		}
		return fileResult{}
	}
	h := s.head[:n]
	src := &s.pre
	*src = prefixReader{head: h, r: r, done: err != nil}
	switch {
	case len(h) >= 3 && h[0] == 0xEF && h[1] == 0xBB && h[2] == 0xBF:
		src.head = h[3:]
	case len(h) >= 2 && ((h[0] == 0xFF && h[1] == 0xFE) || (h[0] == 0xFE && h[1] == 0xFF)):
		rest, err := io.ReadAll(io.LimitReader(src, s.maxMulti))
		if err != nil {
			return fileResult{err: err}
		}
		br := bytes.NewReader(utf16ToUTF8(rest[2:], rest[0] == 0xFE))
		if s.m.multiline {
			return s.searchMultiline(br, walked)
		}
		return s.searchLines(br, walked)
	}
	if s.m.multiline {
		return s.searchMultiline(src, walked)
	}
	return s.searchLines(src, walked)
}

func utf16ToUTF8(b []byte, bigEndian bool) []byte {
	units := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		if bigEndian {
			units = append(units, uint16(b[i])<<8|uint16(b[i+1]))
		} else {
			units = append(units, uint16(b[i+1])<<8|uint16(b[i]))
		}
	}
	out := make([]byte, 0, len(b))
	for _, r := range utf16.Decode(units) {
		out = utf8.AppendRune(out, r)
	}
	if len(b)%2 == 1 {
		out = utf8.AppendRune(out, utf8.RuneError)
	}
	return out
}

// lineBuffer reproduces ripgrep's line buffer: it reads blocks into a
// buffer of 64 KiB (grown when a line does not fit), hands out the complete
// lines read so far, and in "quit" mode stops at the first block that holds
// a NUL byte, before that block is searched. The first read is three bytes
// (ripgrep peeks for a byte order mark), which moves the later block edges.
type lineBuffer struct {
	r       io.Reader
	buf     []byte
	pos     int   // start of unconsumed data
	end     int   // end of logically read data
	phys    int   // end of data read from r (>= end)
	lastLT  int   // end of the complete lines
	base    int64 // file offset of buf[0]
	first   bool
	eof     bool
	quit    bool  // quit mode
	binAt   int64 // offset of the first NUL, -1 if none
	maxLine int
	tooLong bool
	err     error
}

func (lb *lineBuffer) init(r io.Reader, buf []byte, quit bool, maxLine int) {
	*lb = lineBuffer{r: r, buf: buf[:cap(buf)], first: true, quit: quit, binAt: -1, maxLine: maxLine}
	if len(lb.buf) < blockSize {
		lb.buf = make([]byte, blockSize)
	}
	lb.buf = lb.buf[:blockSize]
}

// fill rolls consumed data out and reads until a complete line is
// available. It returns false at the end of the data or when a NUL stops
// the search (quit mode).
func (lb *lineBuffer) fill() bool {
	if lb.quit && lb.binAt >= 0 {
		return false
	}
	// roll
	if lb.pos > 0 {
		n := copy(lb.buf, lb.buf[lb.pos:lb.phys])
		lb.base += int64(lb.pos)
		lb.end -= lb.pos
		lb.lastLT = lb.end
		lb.phys = n
		lb.pos = 0
	}
	for {
		if lb.end == len(lb.buf) {
			grow := len(lb.buf) * 3
			if grow > lb.maxLine+blockSize {
				lb.tooLong = true
				return false
			}
			nb := make([]byte, grow)
			copy(nb, lb.buf[:lb.phys])
			lb.buf = nb
		}
		want := len(lb.buf) - lb.end
		if lb.first {
			want = min(want, 3)
			lb.first = false
		}
		if lb.phys == lb.end && !lb.eof {
			n, err := io.ReadAtLeast(lb.r, lb.buf[lb.phys:], 1)
			lb.phys += n
			if err != nil {
				if err != io.EOF && err != io.ErrUnexpectedEOF {
					lb.err = err
				}
				lb.eof = true
			}
		}
		got := min(want, lb.phys-lb.end)
		if got == 0 {
			lb.lastLT = lb.end
			return lb.end > lb.pos
		}
		old := lb.end
		lb.end += got
		nb := lb.buf[old:lb.end]
		if i := bytes.IndexByte(nb, 0); i >= 0 && lb.binAt < 0 {
			lb.binAt = lb.base + int64(old+i)
			if lb.quit {
				lb.end = old + i
				lb.lastLT = lb.end
				return false
			}
		}
		if j := bytes.LastIndexByte(nb, '\n'); j >= 0 {
			lb.lastLT = old + j + 1
			return true
		}
	}
}

// lines returns the complete lines not yet consumed.
func (lb *lineBuffer) lines() []byte { return lb.buf[lb.pos:lb.lastLT] }

func (lb *lineBuffer) consume() { lb.pos = lb.lastLT }

// ctxLine is a line kept for before-context.
type ctxLine struct {
	no   int
	text []byte
}

// emitter builds the content lines of one file.
type emitter struct {
	s        *fileSearcher
	res      *fileResult
	lastNo   int // last line emitted
	afterEnd int // last line number still due as after-context
	bytes    int
	ring     []ctxLine // before-context candidates, oldest first
}

func (e *emitter) emit(no int, text []byte, match bool) {
	if no <= e.lastNo {
		return
	}
	gap := e.lastNo > 0 && no > e.lastNo+1 && (e.s.before > 0 || e.s.after > 0)
	e.res.outLines++
	if gap {
		e.res.outLines++
	}
	if len(e.res.lines) < e.s.keepLines && e.bytes < e.s.keepBytes {
		e.res.lines = append(e.res.lines, Line{Number: no, Text: append([]byte(nil), text...), Match: match, Gap: gap})
		e.bytes += len(text) + 16
	}
	e.lastNo = no
}

// context handles the lines between matches: after-context of the last
// match and candidates for the before-context of the next.
func (e *emitter) contextLine(no int, text []byte) {
	if no <= e.afterEnd {
		e.emit(no, text, false)
		return
	}
	if e.s.before == 0 {
		return
	}
	if len(e.ring) == e.s.before {
		copy(e.ring, e.ring[1:])
		e.ring = e.ring[:len(e.ring)-1]
	}
	e.ring = append(e.ring, ctxLine{no, append([]byte(nil), text...)})
}

func (e *emitter) match(no int, text []byte) {
	for _, c := range e.ring {
		if c.no >= no-e.s.before && c.no < no {
			e.emit(c.no, c.text, false)
		}
	}
	e.ring = e.ring[:0]
	e.emit(no, text, true)
	e.afterEnd = no + e.s.after
}

func (s *fileSearcher) searchLines(r io.Reader, walked bool) fileResult {
	var res fileResult
	var lb lineBuffer
	lb.init(r, s.buf, walked, s.maxLine)
	defer func() { s.buf = lb.buf[:0] }()
	content := s.mode == Content
	ctxOn := content && (s.before > 0 || s.after > 0)
	em := &emitter{s: s, res: &res}
	lineNo := 1 // number of the line at the start of lb.lines()
	binaryExplicit := false
	for lb.fill() {
		if err := s.ctx.Err(); err != nil {
			res.err = err
			return res
		}
		if !walked && !binaryExplicit && lb.binAt >= 0 && lb.binAt < blockSize {
			binaryExplicit = true
		}
		buf := lb.lines()
		pos, no := 0, lineNo
		for pos < len(buf) {
			ls, le, ok := s.m.nextLine(buf, pos)
			if !ok {
				break
			}
			res.matched = true
			res.count++
			if s.mode == FilesWithMatches {
				return res
			}
			if content && !binaryExplicit {
				if ctxOn {
					no = walkContext(em, buf, pos, ls, no)
				} else if s.lineNumbers {
					no += bytes.Count(buf[pos:ls], []byte{'\n'})
				}
				em.match(no, buf[ls:le])
			}
			pos = le + 1
			no++
		}
		if content && (ctxOn || s.lineNumbers) {
			if ctxOn && pos < len(buf) {
				no = walkContext(em, buf, pos, len(buf), no)
			} else if pos < len(buf) {
				no += bytes.Count(buf[pos:], []byte{'\n'})
			}
		}
		lineNo = no
		lb.consume()
		if !binaryExplicit && lb.binAt >= 0 && lb.binAt < blockSize && !walked {
			binaryExplicit = true
		}
	}
	if lb.err != nil {
		res.err = lb.err
	}
	if lb.tooLong {
		res.note = "a line longer than " + strconv.Itoa(s.maxLine) + " bytes"
	}
	if walked && lb.binAt >= 0 {
		res.suppress = true
		if res.matched && content {
			res.binary, res.binOffset = 1, lb.binAt
		}
		if !res.matched {
			return fileResult{}
		}
	}
	if binaryExplicit && res.matched {
		res.binary, res.binOffset = 2, lb.binAt
		res.lines, res.outLines = nil, 0
	}
	return res
}

// walkContext passes the lines of buf[from:to] (whole lines, the line at
// from numbered no) to the emitter as context and returns the number of
// the line at to.
func walkContext(em *emitter, buf []byte, from, to, no int) int {
	for from < to {
		e := bytes.IndexByte(buf[from:to], '\n')
		if e < 0 {
			em.contextLine(no, buf[from:to])
			return no + 1
		}
		em.contextLine(no, buf[from:from+e])
		from += e + 1
		no++
	}
	return no
}

// searchMultiline searches the whole file with a pattern that can match a
// newline: matches are found in the text as a whole, and the lines they
// span are reported (ripgrep's multi-line search).
func (s *fileSearcher) searchMultiline(r io.Reader, walked bool) fileResult {
	var res fileResult
	data, err := io.ReadAll(io.LimitReader(r, s.maxMulti+1))
	if err != nil {
		return fileResult{err: err}
	}
	if int64(len(data)) > s.maxMulti {
		data = data[:s.maxMulti]
		res.note = "a file larger than " + strconv.FormatInt(s.maxMulti, 10) + " bytes (multiline)"
	}
	binAt := int64(-1)
	if i := bytes.IndexByte(data[:min(len(data), blockSize)], 0); i >= 0 {
		binAt = int64(i)
		if walked {
			return fileResult{}
		}
	}
	content := s.mode == Content
	em := &emitter{s: s, res: &res}
	type region struct{ start, end int }
	var last *region
	var regions []region
	flush := func(rg region) bool {
		res.matched = true
		if s.mode == FilesWithMatches {
			return false
		}
		// Count the matches inside the region, as ripgrep does.
		hay := data[:rg.end]
		at, lastMatch := rg.start, -1
		for at <= len(hay) {
			ms, me, ok := s.m.vm.find(hay, at)
			if !ok {
				break
			}
			if ms == me {
				at = me + 1
				if me == lastMatch {
					continue
				}
			} else {
				at = me
			}
			lastMatch = me
			res.count++
		}
		regions = append(regions, rg)
		return true
	}
	pos := 0
	for pos <= len(data) {
		if err := s.ctx.Err(); err != nil {
			return fileResult{err: err}
		}
		ms, me, ok := s.m.vm.find(data, pos)
		if !ok {
			break
		}
		pos = me
		if ms == me && pos < len(data) {
			pos++
		}
		ls := bytes.LastIndexByte(data[:ms], '\n') + 1
		le := len(data)
		if me > ls && data[me-1] == '\n' {
			le = me
		} else if i := bytes.IndexByte(data[me:], '\n'); i >= 0 {
			le = me + i + 1
		}
		cur := region{ls, le}
		if last != nil && last.end >= cur.start {
			last.end = cur.end
			continue
		}
		if last != nil && !flush(*last) {
			return res
		}
		last = &cur
		if ms == me && me >= len(data) {
			break
		}
	}
	if last != nil && !flush(*last) {
		return res
	}
	if !res.matched {
		return res
	}
	if binAt >= 0 {
		res.binary, res.binOffset = 2, binAt
		return res
	}
	if content {
		no, at := 1, 0
		for _, rg := range regions {
			// context and lines before the region
			if s.before > 0 || s.after > 0 {
				no = walkContext(em, data, at, rg.start, no)
			} else {
				no += bytes.Count(data[at:rg.start], []byte{'\n'})
			}
			p := rg.start
			for p < rg.end {
				e := bytes.IndexByte(data[p:rg.end], '\n')
				var text []byte
				if e < 0 {
					text, p = data[p:rg.end], rg.end
				} else {
					text, p = data[p:p+e], p+e+1
				}
				em.match(no, text)
				no++
			}
			at = rg.end
		}
		if s.after > 0 && at < len(data) {
			walkContext(em, data, at, len(data), no)
		}
	}
	return res
}
