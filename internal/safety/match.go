package safety

import "strings"

// Hand-written matchers for the hottest safety patterns. Each is equivalent
// to the regular expression its rule carries in src (TestSafetyCorpus,
// TestSafetyFastPathMatchesNaive and FuzzCheckCommand hold them to it) and
// runs in one pass, where Go's regexp engine would cost tens of
// microseconds on a long command.

// findParentRef is `\.\.[/\\]|(?:^|[\s=])\.\.(?:$|[\s;&|)])`.
func findParentRef(text string) (int, int) {
	for off := 0; ; {
		k := strings.Index(text[off:], "..")
		if k < 0 {
			return -1, -1
		}
		i := off + k
		if i+2 < len(text) && (text[i+2] == '/' || text[i+2] == '\\') {
			return i, i + 3
		}
		if i == 0 || isRESpace(text[i-1]) || text[i-1] == '=' {
			if i+2 == len(text) {
				return max(i-1, 0), i + 2
			}
			if c := text[i+2]; isRESpace(c) || strings.IndexByte(";&|)", c) >= 0 {
				return max(i-1, 0), i + 3
			}
		}
		off = i + 1
	}
}

// isRESpace is Go regexp's \s.
func isRESpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// findSplitWord returns a finder for `[a-z]QQ[a-z]`, QQ being two quotes.
func findSplitWord(qq string) func(string) (int, int) {
	return func(text string) (int, int) {
		for off := 0; ; {
			k := strings.Index(text[off:], qq)
			if k < 0 {
				return -1, -1
			}
			i := off + k
			if i > 0 && i+2 < len(text) && isLowerASCII(text[i-1]) && isLowerASCII(text[i+2]) {
				return i - 1, i + 3
			}
			off = i + 1
		}
	}
}

func isLowerASCII(c byte) bool { return c >= 'a' && c <= 'z' }

// rmFlag is a recursive flag of rm.
const rmFlag = `(?:-rf?\b|[ \t]-[a-z]*r[a-z]*\b|[ \t]--recursive\b)`

// findDestructiveRm matches `\brm\b.*(?:F.*[/~*]|[/~*].*F)`, F = rmFlag:
// on one line, after the word rm, both a recursive flag and one of / ~ *
// (they cannot overlap, so their order does not matter, and only the first
// rm of a line needs checking).
func findDestructiveRm(text string) (int, int) {
	for lineStart := 0; lineStart < len(text); {
		lineEnd := strings.IndexByte(text[lineStart:], '\n')
		if lineEnd < 0 {
			lineEnd = len(text)
		} else {
			lineEnd += lineStart
		}
		for p := lineStart; p < lineEnd; {
			start, end := nextWord(text[:lineEnd], p)
			if start < 0 {
				break
			}
			if end-start == 2 && text[start:end] == "rm" {
				rest := text[end:lineEnd]
				if strings.ContainsAny(rest, "/~*") && hasRmFlag(rest) {
					return start, lineEnd
				}
				break
			}
			p = end
		}
		lineStart = lineEnd + 1
	}
	return -1, -1
}

// hasRmFlag reports whether rmFlag matches somewhere in rest (one line).
func hasRmFlag(rest string) bool {
	boundaryAt := func(j int) bool { return j >= len(rest) || !isWordByte(rest[j]) }
	for i := 0; i < len(rest); i++ {
		if rest[i] != '-' {
			continue
		}
		if i+1 < len(rest) && rest[i+1] == 'r' {
			if boundaryAt(i+2) || (i+2 < len(rest) && rest[i+2] == 'f' && boundaryAt(i+3)) {
				return true
			}
		}
		if i == 0 || (rest[i-1] != ' ' && rest[i-1] != '\t') {
			continue
		}
		if strings.HasPrefix(rest[i:], "--recursive") && boundaryAt(i+len("--recursive")) {
			return true
		}
		j := i + 1
		r := false
		for j < len(rest) && isLowerASCII(rest[j]) {
			r = r || rest[j] == 'r'
			j++
		}
		if r && boundaryAt(j) {
			return true
		}
	}
	return false
}

// findPipeToShell matches
// `\|\s*(sh|bash|zsh|fish)\s*$|(?:^|[^|])\|\s*(?:\S*/)?(?:sh|bash|zsh|fish|dash|ksh)\b`
// in one pass: for a shell name starting at p, a pipe q matches when only
// blanks separate them, or when text[p-1] is '/' and q is in the same
// non-blank run before p-1 or ends the run before it (blanks between).
func findPipeToShell(text string) (int, int) {
	// The listed form: a pipe, blanks, the shell, blanks, the end.
	t := strings.TrimRight(text, " \t\n\f\r")
	for _, sh := range shellWords[:4] {
		if strings.HasSuffix(t, sh) {
			q := len(t) - len(sh) - 1
			for q >= 0 && isRESpace(text[q]) {
				q--
			}
			if q >= 0 && text[q] == '|' {
				return q, len(text)
			}
		}
	}
	validPipe := func(q int) bool { return text[q] == '|' && (q == 0 || text[q-1] != '|') }
	runStart := 0
	pipeBeforeRun := false // the last non-blank before the current run is a valid pipe
	firstPipe := -1        // first valid pipe inside the current run
	lastNonBlank := -1
	for p := 0; p < len(text); p++ {
		c := text[p]
		if isRESpace(c) {
			continue
		}
		if p == 0 || isRESpace(text[p-1]) { // a run starts
			runStart = p
			pipeBeforeRun = lastNonBlank >= 0 && validPipe(lastNonBlank)
			firstPipe = -1
		}
		lastNonBlank = p
		if c == '|' && firstPipe < 0 && validPipe(p) {
			firstPipe = p
		}
		if strings.IndexByte("sbzfdk", c) < 0 {
			continue
		}
		for _, sh := range shellWords {
			if !strings.HasPrefix(text[p:], sh) || (p+len(sh) < len(text) && isWordByte(text[p+len(sh)])) {
				continue
			}
			var ok bool
			switch {
			case p == runStart:
				ok = pipeBeforeRun
			case validPipe(p - 1):
				ok = true
			case text[p-1] == '/':
				ok = pipeBeforeRun || (firstPipe >= 0 && firstPipe <= p-2)
			}
			if ok {
				return max(runStart-1, 0), p + len(sh)
			}
		}
	}
	return -1, -1
}

// findWordThen matches `\bWORD\s+X`, X being what after reports: the
// length of its match at the start of r, or -1.
func findWordThen(word string, after func(r string) int) func(string) (int, int) {
	return func(text string) (int, int) {
		for p := 0; p < len(text); {
			start, end := nextWord(text, p)
			if start < 0 {
				break
			}
			p = end
			if text[start:end] != word || end >= len(text) || !isRESpace(text[end]) {
				continue
			}
			j := end
			for j < len(text) && isRESpace(text[j]) {
				j++
			}
			if n := after(text[j:]); n >= 0 {
				return start, j + n
			}
		}
		return -1, -1
	}
}

func prefixLen(r, lit string) int {
	if strings.HasPrefix(r, lit) {
		return len(lit)
	}
	return -1
}

// wordPrefixLen is prefixLen followed by a word boundary (lit ends in a
// word character).
func wordPrefixLen(r, lit string) int {
	if strings.HasPrefix(r, lit) && (len(r) == len(lit) || !isWordByte(r[len(lit)])) {
		return len(lit)
	}
	return -1
}

// symlinkFlagLen matches `-s|(?:-[a-z]*s[a-z]*|--symbolic)\b` at the start of r.
func symlinkFlagLen(r string) int {
	if strings.HasPrefix(r, "-s") {
		return 2
	}
	if n := wordPrefixLen(r, "--symbolic"); n >= 0 {
		return n
	}
	if r == "" || r[0] != '-' {
		return -1
	}
	j, s := 1, false
	for j < len(r) && isLowerASCII(r[j]) {
		s = s || r[j] == 's'
		j++
	}
	if s && (j == len(r) || !isWordByte(r[j])) {
		return j
	}
	return -1
}

// findToolPipe matches `TOOL\b.*\|\s*(sh|bash|zsh|fish)\b` (TOOL need not
// start a word, as in the listed pattern).
func findToolPipe(tool string) func(string) (int, int) {
	return func(text string) (int, int) {
		for off := 0; off < len(text); {
			k := strings.Index(text[off:], tool)
			if k < 0 {
				break
			}
			c := off + k
			off = c + 1
			after := c + len(tool)
			if after < len(text) && isWordByte(text[after]) {
				continue
			}
			lineEnd := strings.IndexByte(text[after:], '\n')
			if lineEnd < 0 {
				lineEnd = len(text)
			} else {
				lineEnd += after
			}
			for i := after; i < lineEnd; i++ {
				if text[i] != '|' {
					continue
				}
				j := i + 1
				for j < len(text) && isRESpace(text[j]) {
					j++
				}
				for _, sh := range shellWords[:4] {
					if n := wordPrefixLen(text[j:], sh); n >= 0 {
						return c, j + n
					}
				}
			}
			// Later occurrences on this line see a suffix of the same text.
			off = lineEnd + 1
		}
		return -1, -1
	}
}
