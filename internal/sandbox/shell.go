package sandbox

import (
	"errors"
	"os"
	"strings"
)

// ErrUnknownShell is returned by ResolveShell for a preference it does not
// know.
var ErrUnknownShell = errors.New("unknown shell")

// NoShellError is returned by ResolveShell when none of the shells it may
// pick is an executable file.
type NoShellError struct{ Tried []string }

func (e *NoShellError) Error() string {
	return "no usable shell (" + strings.Join(e.Tried, ", ") + ")"
}

// ResolveShell is the one rule that picks the shell commands run with, from
// a preference: "bash" is /bin/bash, "sh" is /bin/sh, and "auto" (or "")
// prefers /bin/bash and falls back to /bin/sh. The shell must be an
// executable file.
func ResolveShell(pref string) (string, error) {
	var candidates []string
	switch pref {
	case "", "auto":
		candidates = []string{"/bin/bash", "/bin/sh"}
	case "bash":
		candidates = []string{"/bin/bash"}
	case "sh":
		candidates = []string{"/bin/sh"}
	default:
		return "", ErrUnknownShell
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	return "", &NoShellError{Tried: candidates}
}
