package grep

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Format returns the result as the reference's tool answers it: ripgrep's
// output (paths, path:N or path:line), decoded as UTF-8 with replacement,
// trimmed, "No matches found" when empty, cut to the head limit with a
// note of how many lines were hidden, and a note when the search stopped
// early.
func (r *Result) Format() string {
	out := make([]byte, 0, r.bytes+64) // r.bytes is close to the size (a bit over)
	n := 0
	limit := r.opts.HeadLimit
	// begin starts an output line; false when it falls past the limit.
	begin := func() bool {
		if limit > 0 && n >= limit {
			n++
			return false
		}
		if n > 0 {
			out = append(out, '\n')
		}
		n++
		return true
	}
	for _, f := range r.Files {
		switch r.Mode {
		case FilesWithMatches:
			if begin() {
				out = append(out, f.Path...)
			}
		case Count:
			if begin() {
				out = append(out, f.Path...)
				out = append(out, ':')
				out = strconv.AppendInt(out, int64(f.Count), 10)
			}
		case Content:
			for i, l := range f.Lines {
				if r.ctxOn && (l.Gap || (i == 0 && n > 0)) && begin() {
					out = append(out, "--"...)
				}
				if !begin() {
					continue
				}
				mark := byte('-')
				if l.Match {
					mark = ':'
				}
				out = append(out, f.Path...)
				out = append(out, mark)
				if r.opts.LineNumbers {
					out = strconv.AppendInt(out, int64(l.Number), 10)
					out = append(out, mark)
				}
				out = append(out, l.Text...)
			}
			if f.Binary != "" {
				if r.ctxOn && len(f.Lines) == 0 && n > 0 && begin() {
					out = append(out, "--"...)
				}
				if begin() {
					out = append(out, f.Path...)
					out = append(out, ": "...)
					out = append(out, f.Binary...)
				}
			}
		}
	}
	total := max(n, r.outLines)
	text := jsTrim(decodeUTF8(out))
	out = nil
	switch {
	case text == "":
		text = "No matches found"
	case limit > 0 && total > limit:
		text += "\n[output truncated to first " + strconv.Itoa(limit) + " lines; " + strconv.Itoa(total-limit) + " more hidden]"
	}
	if r.Stopped != "" {
		text += "\n[stopped early: " + r.Stopped + "]"
	}
	return text
}

// decodeUTF8 decodes b as the WHATWG UTF-8 decoder does (what Node's
// Buffer.toString does): each maximal invalid subsequence becomes one
// U+FFFD.
func decodeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var out strings.Builder
	out.Grow(len(b) + 16)
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			out.WriteByte(c)
			i++
			continue
		}
		need, lo, hi := 0, byte(0x80), byte(0xBF)
		switch {
		case c >= 0xC2 && c <= 0xDF:
			need = 1
		case c == 0xE0:
			need, lo = 2, 0xA0
		case c == 0xED:
			need, hi = 2, 0x9F
		case c >= 0xE1 && c <= 0xEF:
			need = 2
		case c == 0xF0:
			need, lo = 3, 0x90
		case c == 0xF4:
			need, hi = 3, 0x8F
		case c >= 0xF1 && c <= 0xF3:
			need = 3
		default:
			out.WriteRune(utf8.RuneError)
			i++
			continue
		}
		j := i + 1
		ok := true
		for k := 0; k < need; k++ {
			if j >= len(b) || b[j] < lo || b[j] > hi {
				ok = false
				break
			}
			lo, hi = 0x80, 0xBF
			j++
		}
		if !ok {
			out.WriteRune(utf8.RuneError)
			i = j
			continue
		}
		out.Write(b[i:j])
		i = j
	}
	return out.String()
}

// jsTrim is JavaScript's String.prototype.trim.
func jsTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		switch r {
		case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
			return true
		}
		return r >= 0x2000 && r <= 0x200A
	})
}

// ToolText words an error of Search as the reference's tool does: rg's
// message after the shell wrapper's "Command execution failed with exit
// code 1: ". A path outside the workspace, which the reference searches,
// is refused here with the same prefix and our own message.
func ToolText(err error) string {
	var pe *PatternError
	var ge *GlobError
	var te *TypeError
	var pa *PathError
	if errors.As(err, &pe) || errors.As(err, &ge) || errors.As(err, &te) || errors.As(err, &pa) {
		return "Command execution failed with exit code 1: " + err.Error()
	}
	return err.Error()
}
