package safety

import "strings"

// StripHeredocs returns s without the bodies and terminator lines of its
// here-documents (<<EOF, <<-EOF, <<'EOF', <<"EOF", several per line); the
// line holding "<<" stays. Two kinds of body are kept because the shell
// runs them: the body of a heredoc whose delimiter is unquoted when it
// contains "$(" or "`" (substitutions), and any body on a line that runs a
// shell ("bash <<EOF", "env X=1 sh -s <<EOF", "source /dev/stdin <<EOF").
//
// Removing text is only safe where the shell agrees that it is data, so the
// lexer models bash's quoting just far enough to find real "<<" operators
// (not inside quotes, comments, arithmetic or "<<<") and gives up, returning
// s unchanged, on anything it does not model exactly: backticks, "$[",
// complex "${…}", heredocs inside "$(…)", unbalanced quotes, a heredoc
// without its terminator line. Giving up only makes the check stricter.
func StripHeredocs(s string) string {
	if !strings.Contains(s, "<<") {
		return s
	}
	if out, ok := lexHeredocs(s); ok {
		return out
	}
	return s
}

type heredoc struct {
	delim     string
	tabs      bool // <<- : leading tabs of body lines are ignored
	quoted    bool // some part of the delimiter was quoted: no expansion in the body
	lineStart int  // start of the line holding the operator
}

// lexHeredocs does the work of StripHeredocs; ok is false when it gives up.
func lexHeredocs(s string) (out string, ok bool) {
	var b strings.Builder
	copied := 0    // s[:copied] has been decided (written to b or dropped)
	var subs []int // open "$(" contexts, each with its paren depth
	var dq []int   // len(subs) at which each open double quote started
	var pending []heredoc
	wordStart := true
	lineStart := 0
	n := len(s)
	i := 0
	for i < n {
		c := s[i]
		if len(dq) > 0 && dq[len(dq)-1] == len(subs) { // inside "…"
			switch c {
			case '\\':
				i += 2
			case '"':
				dq = dq[:len(dq)-1]
				i++
			case '`':
				return "", false
			case '$':
				j, sub, ok := lexDollar(s, i, true)
				if !ok {
					return "", false
				}
				if sub {
					subs = append(subs, 0)
				}
				i = j
			default:
				i++
			}
			wordStart = false
			continue
		}
		switch c {
		case '\\':
			i += 2
			wordStart = false
			continue
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "", false
			}
			i += j + 2
			wordStart = false
			continue
		case '"':
			dq = append(dq, len(subs))
			i++
			wordStart = false
			continue
		case '`':
			return "", false
		case '$':
			j, sub, ok := lexDollar(s, i, false)
			if !ok {
				return "", false
			}
			if sub {
				subs = append(subs, 0)
			}
			i = j
			wordStart = false
			continue
		case '#':
			if wordStart {
				if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
					i += j
				} else {
					i = n
				}
				continue
			}
		case '(':
			if wordStart && i+1 < n && s[i+1] == '(' {
				j, ok := skipArith(s, i)
				if !ok {
					return "", false
				}
				i = j
				wordStart = false
				continue
			}
			if len(subs) > 0 {
				subs[len(subs)-1]++
			}
		case ')':
			if k := len(subs) - 1; k >= 0 {
				if subs[k] == 0 {
					subs = subs[:k]
				} else {
					subs[k]--
				}
			}
		case '<':
			if strings.HasPrefix(s[i:], "<<<") {
				i += 3
				wordStart = true
				continue
			}
			if strings.HasPrefix(s[i:], "<<") {
				if len(subs) > 0 {
					// bash ends such bodies differently (e.g. at "EOF)").
					return "", false
				}
				h, j, ok := lexDelimiter(s, i+2)
				if !ok {
					return "", false
				}
				h.lineStart = lineStart
				if h.delim != "" {
					pending = append(pending, h)
				}
				i = j
				wordStart = false
				continue
			}
		case '\n':
			if len(pending) > 0 {
				if len(subs) > 0 {
					return "", false
				}
				pos := i + 1
				for _, h := range pending {
					bodyEnd, next, found := findTerminator(s, pos, h)
					if !found {
						return "", false
					}
					body := s[pos:bodyEnd]
					substitutes := !h.quoted && (strings.Contains(body, "$(") || strings.Contains(body, "`"))
					if !substitutes && !feedsShell(s[h.lineStart:i]) {
						b.WriteString(s[copied:pos])
						copied = next
					}
					pos = next
				}
				pending = pending[:0]
				i = pos
				lineStart = pos
				wordStart = true
				continue
			}
			lineStart = i + 1
		}
		wordStart = c == ' ' || c == '\t' || c == '\n' || strings.IndexByte(";&|()<>", c) >= 0
		i++
	}
	if len(subs) > 0 || len(dq) > 0 || i > n {
		return "", false
	}
	b.WriteString(s[copied:])
	return b.String(), true
}

// lexDollar lexes the "$" construct at s[i]. It returns where lexing goes
// on and whether a "$(" command substitution was opened. "$'…'" (outside
// double quotes), "$((…))" and simple "${…}" are skipped whole; "$[" and
// "${…}" holding quotes, substitutions or newlines make it give up.
func lexDollar(s string, i int, inDQ bool) (next int, sub, ok bool) {
	if i+1 >= len(s) {
		return i + 1, false, true
	}
	switch s[i+1] {
	case '\'':
		if inDQ {
			return i + 1, false, true
		}
		for j := i + 2; j < len(s); j++ {
			switch s[j] {
			case '\\':
				j++
			case '\'':
				return j + 1, false, true
			}
		}
		return 0, false, false
	case '(':
		if i+2 < len(s) && s[i+2] == '(' {
			j, ok := skipArith(s, i+1)
			return j, false, ok
		}
		return i + 2, true, true
	case '{':
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 || strings.ContainsAny(s[i+2:i+2+j], "'\"`\\({<\n") {
			return 0, false, false
		}
		return i + 2 + j + 1, false, true
	case '[':
		return 0, false, false
	}
	return i + 1, false, true
}

// skipArith skips the arithmetic "((…))" starting at s[i] == '('. It gives
// up on quotes, backslashes, backticks and newlines inside.
func skipArith(s string, i int) (int, bool) {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j + 1, true
			}
		case '\'', '"', '`', '\\', '\n':
			return 0, false
		}
	}
	return 0, false
}

// lexDelimiter reads the heredoc delimiter word after "<<" (s[i:]); an
// empty delim means there is none (a syntax error for the shell).
func lexDelimiter(s string, i int) (h heredoc, next int, ok bool) {
	n := len(s)
	if i < n && s[i] == '-' {
		h.tabs = true
		i++
	}
	for i < n && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	var d strings.Builder
	for i < n {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || strings.IndexByte(";&|()<>", c) >= 0 {
			break
		}
		switch c {
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return h, 0, false
			}
			d.WriteString(s[i+1 : i+1+j])
			i += j + 2
			h.quoted = true
		case '"':
			j := i + 1
			for ; j < n && s[j] != '"'; j++ {
				if s[j] == '\\' && j+1 < n && strings.IndexByte("\"\\$`", s[j+1]) >= 0 {
					j++
				}
				if s[j] == '\n' || s[j] == '`' || s[j] == '$' {
					return h, 0, false
				}
				d.WriteByte(s[j])
			}
			if j >= n {
				return h, 0, false
			}
			i = j + 1
			h.quoted = true
		case '\\':
			if i+1 >= n || s[i+1] == '\n' {
				return h, 0, false
			}
			d.WriteByte(s[i+1])
			i += 2
			h.quoted = true
		case '$', '`':
			return h, 0, false
		default:
			d.WriteByte(c)
			i++
		}
	}
	h.delim = d.String()
	return h, i, true
}

// findTerminator looks for h's terminator line from pos on. It returns the
// end of the body (start of the terminator line) and where the text after
// the terminator line starts.
func findTerminator(s string, pos int, h heredoc) (bodyEnd, next int, ok bool) {
	for pos <= len(s) {
		end := strings.IndexByte(s[pos:], '\n')
		lineEnd, after := len(s), len(s)
		if end >= 0 {
			lineEnd, after = pos+end, pos+end+1
		}
		line := s[pos:lineEnd]
		if h.tabs {
			line = strings.TrimLeft(line, "\t")
		}
		if line == h.delim {
			return pos, after, true
		}
		if end < 0 {
			return 0, 0, false
		}
		pos = after
	}
	return 0, 0, false
}

// shellCommands read commands from their standard input or a file.
var shellCommands = map[string]bool{"sh": true, "bash": true, "zsh": true, "fish": true, "dash": true,
	"ksh": true, "mksh": true, "csh": true, "tcsh": true, "busybox": true, "source": true, ".": true}

// commandWrappers run the command that follows them.
var commandWrappers = map[string]bool{"env": true, "exec": true, "command": true, "nohup": true, "time": true,
	"sudo": true, "doas": true, "builtin": true, "xargs": true, "nice": true, "timeout": true, "stdbuf": true}

// feedsShell reports whether a command of line (in command position,
// possibly after wrappers, assignments and flags) is a shell, whose
// heredoc body is then commands, not data.
func feedsShell(line string) bool {
	expectCmd := true
	wrapped := false
	skipNext := false
	for _, f := range strings.FieldsFunc(line, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n'
	}) {
		for _, tok := range splitSeparators(f) {
			if tok == "" {
				expectCmd, wrapped = true, false
				continue
			}
			if !expectCmd {
				continue
			}
			if skipNext {
				skipNext = false
				continue
			}
			if r := strings.TrimLeft(tok, "0123456789"); r != "" && (r[0] == '<' || r[0] == '>' || strings.HasPrefix(r, "&>")) {
				// A redirection before the command; "> file" spans two fields.
				skipNext = strings.Trim(r, "<>&-") == ""
				continue
			}
			word := strings.Trim(tok, `"'\`)
			if wrapped && (strings.HasPrefix(word, "-") || isNumber(word)) {
				continue
			}
			if strings.Contains(word, "=") && !strings.HasPrefix(word, "-") {
				continue // an assignment before the command
			}
			base := word[strings.LastIndexByte(word, '/')+1:]
			if shellCommands[base] {
				return true
			}
			if commandWrappers[base] {
				wrapped = true
				continue
			}
			expectCmd = false
		}
	}
	return false
}

// splitSeparators splits f at the control operators ; | & ( ), yielding ""
// for each operator; the & of a redirection (2>&1, &>f) is no operator.
func splitSeparators(f string) []string {
	var out []string
	start := 0
	for i := 0; i < len(f); i++ {
		if f[i] == '&' && ((i > 0 && (f[i-1] == '>' || f[i-1] == '<')) || (i+1 < len(f) && f[i+1] == '>')) {
			continue // part of a redirection: >&, <&, &>
		}
		if strings.IndexByte(";|&()", f[i]) >= 0 {
			if i > start {
				out = append(out, f[start:i])
			}
			out = append(out, "")
			start = i + 1
		}
	}
	if start < len(f) {
		out = append(out, f[start:])
	}
	return out
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '.' && s[i] != 's' && s[i] != 'm' {
			return false
		}
	}
	return true
}
