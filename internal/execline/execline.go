// Package execline is the command line of an exec request that carries a
// working directory and environment, in the form the TypeScript client
// sends over SSH:
//
//	HOME='<dir>' K='v' … cd "<dir>" && <command>
//
// Remote encodes it (Encode) and the daemon decodes it (Parse), so the two
// sides cannot drift apart: what the daemon applies is exactly what a
// shell would have done with the line.
package execline

import (
	"sort"
	"strings"
)

// Line is a decoded command line: Env holds the assignments (HOME
// included), Dir the directory of the cd and Command what follows "&&".
type Line struct {
	Env     map[string]string
	Dir     string
	Command string
}

// MaxVars bounds the assignments Parse accepts.
const MaxVars = 1024

// ValidName reports whether name can be carried as an assignment: a shell
// name (letters, digits and '_', not starting with a digit).
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isNameByte(name[i], i == 0) {
			return false
		}
	}
	return true
}

// ValidDir reports whether dir can be written in the line: not empty, and
// none of the characters a shell expands or unescapes between double
// quotes ($ ` \ "), nor NUL.
func ValidDir(dir string) bool {
	return dir != "" && !strings.ContainsAny(dir, "$`\\\"\x00")
}

// Encode writes dir, HOME (set to dir) and env into the command line.
// env's names must satisfy ValidName (a "HOME" in env is ignored), its
// values hold no NUL, and dir must satisfy ValidDir; Parse then returns
// command, dir and env with HOME. exportAgain repeats the assignments as an
// export before the command, for peers that do not recognise the form (a
// plain shell gives the variables to "cd" only); Parse then sees the export
// as part of the command.
func Encode(dir string, env map[string]string, command string, exportAgain bool) string {
	keys := make([]string, 0, len(env))
	for k := range env {
		if k != "HOME" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var a strings.Builder
	a.WriteString("HOME=")
	a.WriteString(quote(dir))
	for _, k := range keys {
		a.WriteByte(' ')
		a.WriteString(k)
		a.WriteByte('=')
		a.WriteString(quote(env[k]))
	}
	assigns := a.String()
	var b strings.Builder
	b.WriteString(assigns)
	b.WriteString(` cd "`)
	b.WriteString(dir)
	b.WriteString(`" && `)
	if exportAgain {
		b.WriteString("export ")
		b.WriteString(assigns)
		b.WriteString(" && ")
	}
	b.WriteString(command)
	return b.String()
}

// quote quotes s for a POSIX shell: '…' with each ' written '\”.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Parse recognises the form. It accepts only the exact shape the client
// produces, so that what the shell would have done and what the daemon
// does cannot differ: names of letters, digits and '_', values made of
// single-quoted strings and \' escapes, a double-quoted directory that
// satisfies ValidDir, and a non-empty command. Anything else is not
// recognised (ok false) and the caller runs the text as one command.
func Parse(s string) (Line, bool) {
	var c Line
	rest := s
	for {
		rest = strings.TrimLeft(rest, " ")
		if strings.HasPrefix(rest, `cd "`) {
			break
		}
		name, value, after, ok := parseAssignment(rest)
		if !ok || len(c.Env) >= MaxVars {
			return Line{}, false
		}
		if c.Env == nil {
			c.Env = map[string]string{}
		}
		c.Env[name] = value
		rest = after
	}
	rest = rest[len(`cd "`):]
	end := strings.IndexByte(rest, '"')
	if end <= 0 {
		return Line{}, false
	}
	dir := rest[:end]
	if strings.ContainsAny(dir, "$`\\\x00") {
		return Line{}, false
	}
	rest = rest[end+1:]
	const sep = " && "
	if !strings.HasPrefix(rest, sep) {
		return Line{}, false
	}
	cmd := rest[len(sep):]
	if strings.TrimSpace(cmd) == "" {
		return Line{}, false
	}
	c.Dir, c.Command = dir, cmd
	return c, true
}

// parseAssignment parses NAME='value' (value: a run of '...' and \'
// pieces) up to the next space.
func parseAssignment(s string) (name, value, rest string, ok bool) {
	i := 0
	for i < len(s) && isNameByte(s[i], i == 0) {
		i++
	}
	if i == 0 || i >= len(s) || s[i] != '=' {
		return "", "", "", false
	}
	name = s[:i]
	i++
	var b strings.Builder
	pieces := 0
	for i < len(s) && s[i] != ' ' {
		switch {
		case s[i] == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return "", "", "", false
			}
			b.WriteString(s[i+1 : i+1+end])
			i += end + 2
		case strings.HasPrefix(s[i:], `\'`):
			b.WriteByte('\'')
			i += 2
		default:
			return "", "", "", false
		}
		pieces++
	}
	if pieces == 0 || i >= len(s) {
		return "", "", "", false
	}
	v := b.String()
	if strings.IndexByte(v, 0) >= 0 {
		return "", "", "", false
	}
	return name, v, s[i:], true
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
}
