package daemon

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseTSCommand(t *testing.T) {
	cases := []struct {
		in   string
		ok   bool
		want tsCommand
	}{
		{`HOME='/w' cd "/w" && ls`, true, tsCommand{map[string]string{"HOME": "/w"}, "/w", "ls"}},
		{`HOME='/w/a b' K='v'\''q' E='' cd "/w/a b" && echo "$K" && ls`, true,
			tsCommand{map[string]string{"HOME": "/w/a b", "K": "v'q", "E": ""}, "/w/a b", `echo "$K" && ls`}},
		{`cd "/w" && ls`, true, tsCommand{nil, "/w", "ls"}},
		{`K='a b'  cd "/w" && x`, true, tsCommand{map[string]string{"K": "a b"}, "/w", "x"}},
		{`K='$(id)' cd "/w" && x`, true, tsCommand{map[string]string{"K": "$(id)"}, "/w", "x"}},
		// Not the client's shape: run as one command.
		{`ls`, false, tsCommand{}},
		{`K=v cd "/w" && x`, false, tsCommand{}},           // unquoted value
		{`K="v" cd "/w" && x`, false, tsCommand{}},         // double-quoted value
		{`K='v cd "/w" && x`, false, tsCommand{}},          // unterminated
		{`1K='v' cd "/w" && x`, false, tsCommand{}},        // bad name
		{`K='v' cd "/w/$X" && x`, false, tsCommand{}},      // expansion in dir
		{"K='v' cd \"/w/`id`\" && x", false, tsCommand{}},  // substitution in dir
		{`K='v' cd "/w\"" && x`, false, tsCommand{}},       // escape in dir
		{`K='v' cd "/w" ; x`, false, tsCommand{}},          // not &&
		{`K='v' cd "/w" && `, false, tsCommand{}},          // no command
		{`K='v' cd "" && x`, false, tsCommand{}},           // empty dir
		{`K='v'x cd "/w" && x`, false, tsCommand{}},        // junk after value
		{`K='v' cd /w && x`, false, tsCommand{}},           // unquoted dir
		{`K='a'\''b'\'' cd "/w" && x`, false, tsCommand{}}, // unterminated after escape
	}
	for _, c := range cases {
		got, ok := parseTSCommand(c.in)
		if ok != c.ok || (ok && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("%s:\n got %+v %v\nwant %+v %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// quoteTS builds the client's form, as the TypeScript client does.
func quoteTS(env map[string]string, keys []string, dir, cmd string) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "='" + strings.ReplaceAll(env[k], "'", `'\''`) + "' ")
	}
	b.WriteString(`cd "` + dir + `" && ` + cmd)
	return b.String()
}

func FuzzParseTSCommand(f *testing.F) {
	for _, s := range []string{
		`HOME='/w' cd "/w" && ls`,
		`HOME='/w/a b' K='v'\''q' E='' cd "/w/a b" && echo "$K"`,
		`K=v cd "/w" && x`, `cd "/w" && `, `K='`, "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseTSCommand(s)
		if !ok {
			return
		}
		// Whatever is accepted has the safe shape...
		if got.Dir == "" || strings.ContainsAny(got.Dir, "$`\\\"\x00") || strings.TrimSpace(got.Command) == "" {
			t.Fatalf("%q -> %+v", s, got)
		}
		if !strings.HasSuffix(s, got.Command) {
			t.Fatalf("command %q is not the tail of %q", got.Command, s)
		}
		keys := make([]string, 0, len(got.Env))
		for k, v := range got.Env {
			if !validEnvName(k) || strings.IndexByte(v, 0) >= 0 {
				t.Fatalf("%q -> env %q=%q", s, k, v)
			}
			keys = append(keys, k)
		}
		// ...and re-quoting it parses back to the same thing.
		again, ok := parseTSCommand(quoteTS(got.Env, keys, got.Dir, got.Command))
		if !ok || !reflect.DeepEqual(again, got) {
			t.Fatalf("round trip of %q: %+v %v, want %+v", s, again, ok, got)
		}
	})
}
