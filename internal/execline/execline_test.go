package execline

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		ok   bool
		want Line
	}{
		{`HOME='/w' cd "/w" && ls`, true, Line{map[string]string{"HOME": "/w"}, "/w", "ls"}},
		{`HOME='/w/a b' K='v'\''q' E='' cd "/w/a b" && echo "$K" && ls`, true,
			Line{map[string]string{"HOME": "/w/a b", "K": "v'q", "E": ""}, "/w/a b", `echo "$K" && ls`}},
		{`cd "/w" && ls`, true, Line{nil, "/w", "ls"}},
		{`K='a b'  cd "/w" && x`, true, Line{map[string]string{"K": "a b"}, "/w", "x"}},
		{`K='$(id)' cd "/w" && x`, true, Line{map[string]string{"K": "$(id)"}, "/w", "x"}},
		// Not the client's shape: run as one command.
		{`ls`, false, Line{}},
		{`K=v cd "/w" && x`, false, Line{}},           // unquoted value
		{`K="v" cd "/w" && x`, false, Line{}},         // double-quoted value
		{`K='v cd "/w" && x`, false, Line{}},          // unterminated
		{`1K='v' cd "/w" && x`, false, Line{}},        // bad name
		{`K='v' cd "/w/$X" && x`, false, Line{}},      // expansion in dir
		{"K='v' cd \"/w/`id`\" && x", false, Line{}},  // substitution in dir
		{`K='v' cd "/w\"" && x`, false, Line{}},       // escape in dir
		{`K='v' cd "/w" ; x`, false, Line{}},          // not &&
		{`K='v' cd "/w" && `, false, Line{}},          // no command
		{`K='v' cd "" && x`, false, Line{}},           // empty dir
		{`K='v'x cd "/w" && x`, false, Line{}},        // junk after value
		{`K='v' cd /w && x`, false, Line{}},           // unquoted dir
		{`K='a'\''b'\'' cd "/w" && x`, false, Line{}}, // unterminated after escape
	}
	for _, c := range cases {
		got, ok := Parse(c.in)
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

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`HOME='/w' cd "/w" && ls`,
		`HOME='/w/a b' K='v'\''q' E='' cd "/w/a b" && echo "$K"`,
		`K=v cd "/w" && x`, `cd "/w" && `, `K='`, "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := Parse(s)
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
			if !ValidName(k) || strings.IndexByte(v, 0) >= 0 {
				t.Fatalf("%q -> env %q=%q", s, k, v)
			}
			keys = append(keys, k)
		}
		// ...and re-quoting it parses back to the same thing.
		again, ok := Parse(quoteTS(got.Env, keys, got.Dir, got.Command))
		if !ok || !reflect.DeepEqual(again, got) {
			t.Fatalf("round trip of %q: %+v %v, want %+v", s, again, ok, got)
		}
	})
}

// FuzzRoundTrip: what Encode writes, Parse gives back: the command, the
// directory, and the environment with HOME set to the directory.
func FuzzRoundTrip(f *testing.F) {
	f.Add("/w", "ls", "K", "v", "E", "")
	f.Add("/w/a b", `echo "$K" && ls`, "K", "v'q", "HOME", "/elsewhere")
	f.Add("/w/é\n", " x ", "A_1", "'", "_", `'\''`)
	f.Fuzz(func(t *testing.T, dir, cmd, k1, v1, k2, v2 string) {
		env := map[string]string{k1: v1, k2: v2}
		for k, v := range env {
			if !ValidName(k) || strings.IndexByte(v, 0) >= 0 {
				delete(env, k)
			}
		}
		if !ValidDir(dir) || strings.TrimSpace(cmd) == "" {
			return
		}
		line := Encode(dir, env, cmd, false)
		got, ok := Parse(line)
		want := map[string]string{"HOME": dir}
		for k, v := range env {
			if k != "HOME" {
				want[k] = v
			}
		}
		if !ok || got.Dir != dir || got.Command != cmd || !reflect.DeepEqual(got.Env, want) {
			t.Fatalf("Encode(%q, %q, %q) = %q\nparsed %+v %v", dir, env, cmd, line, got, ok)
		}
		// The export for other peers stays part of the command.
		if again, ok := Parse(Encode(dir, env, cmd, true)); !ok || again.Dir != dir ||
			!strings.HasPrefix(again.Command, "export HOME=") || !strings.HasSuffix(again.Command, " && "+cmd) {
			t.Fatalf("with export: %+v %v", again, ok)
		}
	})
}

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{"A": true, "_a1": true, "a_B_9": true, "": false, "1a": false, "A-B": false, "A B": false, "A=B": false, "É": false} {
		if ValidName(name) != ok {
			t.Errorf("ValidName(%q) = %v", name, !ok)
		}
	}
}
