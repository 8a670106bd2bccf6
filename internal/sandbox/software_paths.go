package sandbox

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Software mode's path heuristic. Software isolation runs commands
// unsandboxed, so this is a heuristic against mistakes and casual escapes,
// not a sandbox: a command that builds a path at run time (from variables,
// command output or arithmetic) is not seen. Use bwrap for confinement.
//
// A command is refused when it names an absolute path outside the
// workspace (the scope root for scopes), or another user's home (~name).
// Allowed absolute paths: the workspace itself, the executable directories
// (/bin, /sbin, /usr/bin, /usr/sbin, /usr/local/bin, /usr/local/sbin, so
// "/usr/bin/env python3" works) and the harmless devices (/dev/null,
// /dev/zero, /dev/random, /dev/urandom, /dev/tty, /dev/std*, /dev/fd/*).
// Paths are cleaned first, so "/usr/bin/../../etc" is /etc.
//
// The scan runs over the command with quote characters removed and
// backslash escapes decoded (\x2f, \057, \u002f as in $'…' or printf), and
// takes as a path every '/' that starts a word or follows one of = : , { (
// $ ` ; | & < > or blank; URL authorities ("scheme://") are not paths.
// This errs on the side of refusing: `echo "see /etc"` and `tr / _` are
// refused too.

// softwareAllowedDirs are directories whose contents a command may name.
var softwareAllowedDirs = []string{"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/dev/fd"}

// softwareAllowedFiles are single paths a command may name.
var softwareAllowedFiles = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom",
	"/dev/tty", "/dev/stdin", "/dev/stdout", "/dev/stderr"}

// CheckSoftwarePaths applies the heuristic to command; roots are the host
// paths of the workspace (real and as configured). The error names the path
// found.
func CheckSoftwarePaths(command string, roots ...string) error {
	text := decodeShellText(command)
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '~' && startsPath(text, i) && i+1 < len(text) && isNameByte(text[i+1]) {
			return fmt.Errorf("software isolation: %q names another user's home directory; commands may only use paths inside the workspace",
				pathAt(text, i))
		}
		if c != '/' || !startsPath(text, i) {
			continue
		}
		if i > 0 && text[i-1] == ':' && strings.HasPrefix(text[i:], "//") {
			i = skipPath(text, i)
			continue // scheme://authority
		}
		end := skipPath(text, i)
		if p := text[i : end+1]; !softwarePathAllowed(p, roots) {
			return fmt.Errorf("software isolation: absolute path %q is outside the workspace; commands may only use paths inside the workspace", p)
		}
		i = end
	}
	return nil
}

// softwarePathAllowed reports whether the absolute path p may be named.
func softwarePathAllowed(p string, roots []string) bool {
	p = path.Clean(p)
	for _, r := range roots {
		if r != "" && underOrAt(p, r) {
			return true
		}
	}
	for _, d := range softwareAllowedDirs {
		if underOrAt(p, d) {
			return true
		}
	}
	for _, f := range softwareAllowedFiles {
		if p == f {
			return true
		}
	}
	return false
}

func underOrAt(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// startsPath reports whether position i begins a word or follows a
// character that can start a path.
func startsPath(s string, i int) bool {
	if i == 0 {
		return true
	}
	return strings.IndexByte(" \t\n\r=:,{($`;|&<>!", s[i-1]) >= 0
}

// pathEnd are the characters that end a path in the scan.
const pathEnd = " \t\n\r,;:{}()<>|&`!"

func skipPath(s string, i int) int {
	for i < len(s) && strings.IndexByte(pathEnd, s[i]) < 0 {
		i++
	}
	return i - 1
}

func pathAt(s string, i int) string { return s[i : skipPath(s, i)+1] }

func isNameByte(c byte) bool {
	return c == '_' || c == '.' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// decodeShellText removes quote characters and decodes backslash escapes
// (\xHH, \NNN octal, \uHHHH, \UHHHHHHHH, \c for any other c), wherever they
// are: decoding more than the shell would only makes the check stricter.
func decodeShellText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			continue
		case c == '\\' && i+1 < len(s):
			n, r, ok := decodeEscape(s[i+1:])
			if ok {
				b.WriteRune(r)
				i += n
				continue
			}
			b.WriteByte(s[i+1])
			i++
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// decodeEscape decodes a numeric escape at the start of s (after the
// backslash): its length, the character, and whether there was one.
func decodeEscape(s string) (int, rune, bool) {
	digits := func(prefix, max int, base int, valid func(byte) bool) (int, rune, bool) {
		j := prefix
		for j < len(s) && j-prefix < max && valid(s[j]) {
			j++
		}
		if j == prefix {
			return 0, 0, false
		}
		v, err := strconv.ParseUint(s[prefix:j], base, 32)
		if err != nil {
			return 0, 0, false
		}
		return j, rune(v), true
	}
	isHex := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
	isOct := func(c byte) bool { return c >= '0' && c <= '7' }
	switch {
	case s[0] == 'x':
		return digits(1, 2, 16, isHex)
	case s[0] == 'u':
		return digits(1, 4, 16, isHex)
	case s[0] == 'U':
		return digits(1, 8, 16, isHex)
	case isOct(s[0]):
		return digits(0, 4, 8, isOct)
	}
	return 0, 0, false
}
