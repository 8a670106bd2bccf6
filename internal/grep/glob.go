package grep

import (
	"errors"
	"regexp"
	"strings"
)

// glob is a compiled gitignore-style glob (ripgrep's globset with a
// literal separator: * and ? do not match '/', ** spans directories).
type glob struct {
	kind  globKind
	text  string // basename or suffix or whole path for the fast kinds
	re    *regexp.Regexp
	isDir bool // pattern ended with '/': directories only
	white bool // '!' (a whitelist line in an ignore file)
}

type globKind uint8

const (
	gRegexp   globKind = iota
	gBasename          // **/name
	gExt               // **/*.ext
	gPath              // a literal path
)

func (g *glob) match(p string) bool {
	switch g.kind {
	case gBasename:
		return p[strings.LastIndexByte(p, '/')+1:] == g.text
	case gExt:
		return strings.HasSuffix(p[strings.LastIndexByte(p, '/')+1:], g.text)
	case gPath:
		return p == g.text
	}
	return g.re.MatchString(p)
}

// GlobError is an invalid glob, worded as ripgrep words it.
type GlobError struct {
	Glob string
	msg  string
}

func (e *GlobError) Error() string { return "error parsing glob '" + e.Glob + "': " + e.msg }

var errGlobSyntax = errors.New("glob syntax")

// globToRegexp translates a glob (after the gitignore rewrites) into a
// regular expression over slash-separated paths; literalSep false lets *
// and ? match '/' (file type globs, matched on basenames).
func globToRegexp(g string, literalSep bool) (string, string) {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	star, any := `[^/]*`, `[^/]`
	if !literalSep {
		star, any = `.*`, `.`
	}
	inAlt := false
	rs := []rune(g)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch c {
		case '\\':
			if i+1 >= len(rs) {
				return "", `dangling '\'`
			}
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case '?':
			b.WriteString(any)
		case '*':
			if i+1 < len(rs) && rs[i+1] == '*' {
				// ** is recursive only as a whole path component.
				startOK := i == 0 || rs[i-1] == '/'
				j := i + 2
				endOK := j >= len(rs) || rs[j] == '/'
				if startOK && endOK {
					switch {
					case i == 0 && j >= len(rs):
						b.WriteString(`.*`)
					case i == 0: // **/
						b.WriteString(`(?:.*/)?`)
						j++
					case j >= len(rs): // /**
						b.WriteString(`.*`)
					default: // /**/
						b.WriteString(`(?:.*/)?`)
						j++
					}
					i = j - 1
					continue
				}
				b.WriteString(star)
				i++
				continue
			}
			b.WriteString(star)
		case '[':
			j := i + 1
			var cls strings.Builder
			cls.WriteByte('[')
			if j < len(rs) && (rs[j] == '!' || rs[j] == '^') {
				cls.WriteByte('^')
				j++
			}
			first := true
			closed := false
			for ; j < len(rs); j++ {
				d := rs[j]
				if d == ']' && !first {
					closed = true
					break
				}
				first = false
				if j+2 < len(rs) && rs[j+1] == '-' && rs[j+2] != ']' {
					lo, hi := d, rs[j+2]
					if lo > hi {
						return "", "invalid range; '" + string(lo) + "' > '" + string(hi) + "'"
					}
					cls.WriteString(classEsc(lo) + "-" + classEsc(hi))
					j += 2
					continue
				}
				cls.WriteString(classEsc(d))
			}
			if !closed {
				return "", "unclosed character class; missing ']'"
			}
			cls.WriteByte(']')
			b.WriteString(cls.String())
			i = j
		case '{':
			if inAlt {
				return "", "nested alternate groups are not allowed"
			}
			inAlt = true
			b.WriteString(`(?:`)
		case '}':
			if !inAlt {
				return "", "unopened alternate group; missing '{' (maybe escape '}' with '[}]'?)"
			}
			inAlt = false
			b.WriteString(`)`)
		case ',':
			if inAlt {
				b.WriteString(`|`)
			} else {
				b.WriteString(`,`)
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if inAlt {
		return "", "unclosed alternate group; missing '}'"
	}
	b.WriteString(`$`)
	return b.String(), ""
}

func classEsc(r rune) string {
	switch r {
	case '\\', ']', '[', '^', '-':
		return `\` + string(r)
	}
	return regexp.QuoteMeta(string(r))
}

func isGlobMeta(s string) bool { return strings.ContainsAny(s, `*?[]{}\,`) }

// compileGlob compiles one gitignore-style line (already stripped of '!'
// and the trailing '/'): a glob without a '/' matches the basename at any
// depth, one with a '/' (or anchored) matches the whole path.
func compileGlob(actual string, anchored bool) (*glob, string) {
	if !anchored && !strings.Contains(actual, "/") && !strings.HasPrefix(actual, "**/") {
		actual = "**/" + actual
	}
	if strings.HasSuffix(actual, "/**") {
		actual += "/*"
	}
	if strings.HasPrefix(actual, "**/") {
		rest := actual[3:]
		if !strings.Contains(rest, "/") && !isGlobMeta(rest) && rest != "" {
			return &glob{kind: gBasename, text: rest}, ""
		}
		if strings.HasPrefix(rest, "*") && !strings.Contains(rest, "/") && !isGlobMeta(rest[1:]) && len(rest) > 1 {
			return &glob{kind: gExt, text: rest[1:]}, ""
		}
	}
	if !isGlobMeta(actual) {
		return &glob{kind: gPath, text: actual}, ""
	}
	src, msg := globToRegexp(actual, true)
	if msg != "" {
		return nil, msg
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, "invalid glob"
	}
	return &glob{kind: gRegexp, re: re}, ""
}

// parseGitignoreLine parses one line of an ignore file (or a --glob
// argument, which has the same syntax). ok is false for blank lines and
// comments; msg is set for a line that does not compile.
func parseGitignoreLine(line string) (g *glob, ok bool, msg string) {
	if strings.HasPrefix(line, "#") {
		return nil, false, ""
	}
	if !strings.HasSuffix(line, `\ `) {
		line = strings.TrimRightFunc(line, isRustWhitespace)
	}
	if line == "" {
		return nil, false, ""
	}
	white, anchored := false, false
	if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
		anchored = strings.HasPrefix(line, "/")
	} else {
		if strings.HasPrefix(line, "!") {
			white = true
			line = line[1:]
		}
		if strings.HasPrefix(line, "/") {
			line = line[1:]
			anchored = true
		}
	}
	isDir := false
	if strings.HasSuffix(line, "/") {
		isDir = true
		line = line[:len(line)-1]
		line = strings.TrimSuffix(line, `\`)
	}
	g, msg = compileGlob(line, anchored)
	if msg != "" {
		return nil, false, msg
	}
	g.isDir, g.white = isDir, white
	return g, true, ""
}

// ignoreFile is the compiled lines of one ignore file (or the --glob
// overrides), matched against paths relative to its directory.
type ignoreFile struct {
	globs []*glob
}

type matchResult int8

const (
	matchNone matchResult = iota
	matchIgnore
	matchWhitelist
)

func (f *ignoreFile) match(rel string, isDir bool) matchResult {
	if f == nil {
		return matchNone
	}
	for i := len(f.globs) - 1; i >= 0; i-- {
		g := f.globs[i]
		if g.isDir && !isDir {
			continue
		}
		if g.match(rel) {
			if g.white {
				return matchWhitelist
			}
			return matchIgnore
		}
	}
	return matchNone
}

// parseIgnoreFile compiles an ignore file; lines that do not compile are
// skipped (ripgrep warns about them and carries on).
func parseIgnoreFile(data []byte) *ignoreFile {
	f := &ignoreFile{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if g, ok, _ := parseGitignoreLine(line); ok {
			f.globs = append(f.globs, g)
		}
	}
	if len(f.globs) == 0 {
		return nil
	}
	return f
}
