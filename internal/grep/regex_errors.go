package grep

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// PatternError is an invalid pattern, worded as ripgrep 13 words it.
type PatternError struct {
	Pattern string
	msg     string
	spans   []span // nil for errors ripgrep prints without the pattern
	hint    string
}

func (e *PatternError) Error() string {
	if e.spans == nil {
		return e.msg + e.hint
	}
	return formatSpans(e.Pattern, e.spans) + "error: " + e.msg + e.hint
}

const pcre2Hint = "\n\nConsider enabling PCRE2 with the --pcre2 flag, which can handle backreferences\nand look-around."

// formatSpans notates the pattern with carets under each span the way
// regex-syntax's error formatter does: "regex parse error:", the pattern
// indented (with line numbers when it has several lines) and a caret line
// under each line that holds a span.
func formatSpans(pat string, spans []span) string {
	lines := rustLines(pat)
	lineCount := len(lines)
	if strings.HasSuffix(pat, "\n") {
		lineCount++
	}
	width := 0
	if lineCount > 1 {
		width = len(strconv.Itoa(lineCount))
	}
	byLine := make([][]span, lineCount)
	var multi []span
	for _, sp := range spans {
		if sp.start.line == sp.end.line {
			i := sp.start.line - 1
			if i >= 0 && i < lineCount {
				byLine[i] = append(byLine[i], sp)
				sortSpans(byLine[i])
			}
		} else {
			multi = append(multi, sp)
			sortSpans(multi)
		}
	}
	var b strings.Builder
	b.WriteString("regex parse error:\n")
	divider := strings.Repeat("~", 79)
	if strings.Contains(pat, "\n") {
		b.WriteString(divider + "\n")
	}
	for i, line := range lines {
		if width > 0 {
			n := strconv.Itoa(i + 1)
			b.WriteString(strings.Repeat(" ", width-len(n)) + n + ": ")
		} else {
			b.WriteString("    ")
		}
		b.WriteString(line + "\n")
		if len(byLine[i]) == 0 {
			continue
		}
		pad := 4
		if width > 0 {
			pad = 2 + width
		}
		b.WriteString(strings.Repeat(" ", pad))
		pos := 0
		for _, sp := range byLine[i] {
			for ; pos < sp.start.col-1; pos++ {
				b.WriteByte(' ')
			}
			n := max(1, sp.end.col-sp.start.col)
			b.WriteString(strings.Repeat("^", n))
			pos += n
		}
		b.WriteString("\n")
	}
	if strings.Contains(pat, "\n") {
		b.WriteString(divider + "\n")
		for i, sp := range multi {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString("on line " + strconv.Itoa(sp.start.line) + " (column " + strconv.Itoa(sp.start.col) +
				") through line " + strconv.Itoa(sp.end.line) + " (column " + strconv.Itoa(sp.end.col-1) + ")")
		}
		if len(multi) > 0 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// rustLines splits like Rust's str::lines: on "\n", dropping one trailing
// "\r" per line and a final empty line.
func rustLines(s string) []string {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, "\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	for i, p := range parts {
		parts[i] = strings.TrimSuffix(p, "\r")
	}
	return parts
}

func sortSpans(s []span) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && spanLess(s[j], s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func spanLess(a, b span) bool {
	if a.start.off != b.start.off {
		return a.start.off < b.start.off
	}
	return a.end.off < b.end.off
}

// debugRune is Rust's {:?} of a one-character string.
func debugRune(r rune) string {
	switch r {
	case '\n':
		return `"\n"`
	case '\r':
		return `"\r"`
	case '\t':
		return `"\t"`
	case '"':
		return `"\""`
	case '\\':
		return `"\\"`
	}
	if r < 0x20 || r == 0x7f || !utf8.ValidRune(r) {
		return `"\u{` + strconv.FormatInt(int64(r), 16) + `}"`
	}
	return `"` + string(r) + `"`
}
