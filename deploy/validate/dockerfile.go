package validate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Image is what the check needs of the image the Dockerfile builds: the
// final stage's ENTRYPOINT and CMD (exec form), WORKDIR and ENV, and the
// names of the Go variables its build sets with -ldflags -X.
type Image struct {
	Entrypoint []string
	Cmd        []string
	WorkingDir string
	Env        []string // KEY=VALUE, in order, build arguments substituted
	LinkerVars []string // "main.version", … from -X flags
	Copies     []Copy   // the final stage's COPY instructions
}

// Copy is one COPY of the final stage: From is the stage (or image) it
// copies from, "" for the build context.
type Copy struct {
	From string
	Srcs []string
	Dst  string
}

// ParseDockerfile reads the final stage of a Dockerfile. ENTRYPOINT and CMD
// must be in exec form (a JSON array): the shell form runs through
// /bin/sh -c, which puts a shell, not the entrypoint, at PID 1, and which
// this check refuses rather than models. Lines continue with a trailing
// backslash; comments and blank lines are skipped. ARG defaults (global
// ones redeclared in the stage, and the stage's own) are substituted in ENV
// values as ${NAME} or $NAME.
func ParseDockerfile(b []byte) (Image, error) {
	lines, err := logicalLines(b)
	if err != nil {
		return Image{}, err
	}
	var img Image
	global := map[string]string{}
	var args map[string]string // nil before the first FROM
	stages := 0
	for _, l := range lines {
		instr, rest := l.text, ""
		if i := strings.IndexAny(l.text, " \t"); i >= 0 {
			instr, rest = l.text[:i], strings.TrimSpace(l.text[i+1:])
		}
		switch strings.ToUpper(instr) {
		case "FROM":
			stages++
			img = Image{LinkerVars: img.LinkerVars} // only the final stage's files count
			args = map[string]string{}
		case "ARG":
			name, def, hasDef := strings.Cut(rest, "=")
			if name == "" || strings.ContainsAny(name, " \t$") {
				return Image{}, fmt.Errorf("line %d: malformed ARG %q", l.n, rest)
			}
			if args == nil {
				global[name] = def
				continue
			}
			if !hasDef {
				def = global[name]
			}
			args[name] = expandArgs(def, args)
		case "ENV":
			if args == nil {
				return Image{}, fmt.Errorf("line %d: ENV before FROM", l.n)
			}
			kvs, err := parseEnv(rest)
			if err != nil {
				return Image{}, fmt.Errorf("line %d: %w", l.n, err)
			}
			for _, kv := range kvs {
				k, v, _ := strings.Cut(kv, "=")
				img.Env = setEnv(img.Env, k, expandArgs(v, args))
			}
		case "WORKDIR":
			img.WorkingDir = expandArgs(rest, args)
		case "ENTRYPOINT", "CMD":
			argv, err := execForm(rest)
			if err != nil {
				return Image{}, fmt.Errorf("line %d: %s: %w", l.n, strings.ToUpper(instr), err)
			}
			if strings.ToUpper(instr) == "ENTRYPOINT" {
				// Docker: setting ENTRYPOINT resets a CMD set before it.
				img.Entrypoint, img.Cmd = argv, nil
			} else {
				img.Cmd = argv
			}
		case "COPY":
			cp, err := parseCopy(rest)
			if err != nil {
				return Image{}, fmt.Errorf("line %d: %w", l.n, err)
			}
			img.Copies = append(img.Copies, cp)
		case "RUN":
			img.LinkerVars = append(img.LinkerVars, linkerVars(rest)...)
		}
	}
	if stages == 0 {
		return Image{}, errors.New("no FROM")
	}
	if len(img.Entrypoint) == 0 {
		return Image{}, errors.New("the final stage has no ENTRYPOINT")
	}
	return img, nil
}

type logicalLine struct {
	n    int // the line it starts on
	text string
}

// logicalLines joins continued lines and drops comments and blank lines.
func logicalLines(b []byte) ([]logicalLine, error) {
	var out []logicalLine
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\"))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(line)
		if t := strings.TrimSpace(cur.String()); t != "" {
			out = append(out, logicalLine{start, t})
		}
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("line %d: continuation at the end of the file", start)
	}
	return out, nil
}

// execForm decodes a JSON array of strings.
func execForm(s string) ([]string, error) {
	if !strings.HasPrefix(s, "[") {
		return nil, fmt.Errorf("shell form %q: use the exec form, a JSON array", s)
	}
	var argv []string
	if err := json.Unmarshal([]byte(s), &argv); err != nil {
		return nil, fmt.Errorf("exec form %q: %w", s, err)
	}
	if len(argv) == 0 {
		return nil, errors.New("empty exec form")
	}
	return argv, nil
}

// parseEnv parses "K=V [K2=V2 …]" (values may be double-quoted) or the
// legacy "K V".
func parseEnv(s string) ([]string, error) {
	if k, v, ok := strings.Cut(s, " "); ok && !strings.Contains(k, "=") {
		return []string{k + "=" + strings.TrimSpace(v)}, nil
	}
	var out []string
	for s != "" {
		k, rest, ok := strings.Cut(s, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t\"") {
			return nil, fmt.Errorf("malformed ENV %q", s)
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := strings.Index(rest[1:], `"`)
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote in ENV %q", s)
			}
			v, rest = rest[1:1+end], rest[2+end:]
		} else {
			v, rest, _ = strings.Cut(rest, " ")
		}
		out = append(out, k+"="+v)
		s = strings.TrimSpace(rest)
	}
	return out, nil
}

var argRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// expandArgs substitutes build arguments; an unknown one becomes "".
func expandArgs(s string, args map[string]string) string {
	return argRef.ReplaceAllStringFunc(s, func(m string) string {
		name := strings.Trim(m, "${}")
		return args[name]
	})
}

var linkerX = regexp.MustCompile(`-X\s+([A-Za-z0-9_./-]+\.[A-Za-z_][A-Za-z0-9_]*)=`)

// linkerVars lists the variables a RUN line's go build sets with -X.
func linkerVars(run string) []string {
	var out []string
	for _, m := range linkerX.FindAllStringSubmatch(run, -1) {
		out = append(out, m[1])
	}
	return out
}

// setEnv sets k in env (KEY=VALUE entries), keeping the order of first
// appearance.
func setEnv(env []string, k, v string) []string {
	for i, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			env[i] = k + "=" + v
			return env
		}
	}
	return append(env, k+"="+v)
}

// parseCopy parses "[--from=S] [--chmod=…] SRC… DST" (not the JSON form).
func parseCopy(s string) (Copy, error) {
	var cp Copy
	f := strings.Fields(s)
	for len(f) > 0 && strings.HasPrefix(f[0], "--") {
		if v, ok := strings.CutPrefix(f[0], "--from="); ok {
			cp.From = v
		}
		f = f[1:]
	}
	if len(f) < 2 || strings.HasPrefix(f[0], "[") {
		return Copy{}, fmt.Errorf("COPY %q: want SRC… DST", s)
	}
	cp.Srcs, cp.Dst = f[:len(f)-1], f[len(f)-1]
	return cp, nil
}
