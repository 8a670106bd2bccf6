package daemon

import "strings"

// tsCommand is an exec request in the form the TypeScript client sends:
//
//	HOME='<cwd>' K='v' … cd "<cwd>" && <command>
//
// Env holds the assignments (single-quoted values, with '\” for a quote),
// Dir the directory of the cd and Command what follows "&&".
type tsCommand struct {
	Env     map[string]string
	Dir     string
	Command string
}

// maxPrefixVars bounds the assignments parseTSCommand accepts.
const maxPrefixVars = 1024

// parseTSCommand recognises the TypeScript client's prefix. It accepts
// only the exact shape the client produces, so that what the shell would
// have done and what the daemon does cannot differ: names of letters,
// digits and '_', values made of single-quoted strings and \' escapes, a
// double-quoted directory without the characters the shell would expand
// or unescape ($ ` \ "), and a non-empty command. Anything else is not
// recognised (ok false) and the caller runs the text as one command.
func parseTSCommand(s string) (tsCommand, bool) {
	var c tsCommand
	rest := s
	for {
		rest = strings.TrimLeft(rest, " ")
		if strings.HasPrefix(rest, `cd "`) {
			break
		}
		name, value, after, ok := parseAssignment(rest)
		if !ok || len(c.Env) >= maxPrefixVars {
			return tsCommand{}, false
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
		return tsCommand{}, false
	}
	dir := rest[:end]
	if strings.ContainsAny(dir, "$`\\\x00") {
		return tsCommand{}, false
	}
	rest = rest[end+1:]
	const sep = " && "
	if !strings.HasPrefix(rest, sep) {
		return tsCommand{}, false
	}
	cmd := rest[len(sep):]
	if strings.TrimSpace(cmd) == "" {
		return tsCommand{}, false
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
