package sandbox

import (
	"errors"
	"os"
	"testing"
)

func TestResolveShell(t *testing.T) {
	_, bashErr := os.Stat("/bin/bash")
	auto := "/bin/bash"
	if bashErr != nil {
		auto = "/bin/sh"
	}
	for _, tc := range []struct {
		pref, want string
		err        error
	}{
		{"", auto, nil},
		{"auto", auto, nil},
		{"sh", "/bin/sh", nil},
		{"zsh", "", ErrUnknownShell},
		{"/bin/sh", "", ErrUnknownShell},
	} {
		got, err := ResolveShell(tc.pref)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("ResolveShell(%q) = %q, %v; want %q, %v", tc.pref, got, err, tc.want, tc.err)
		}
	}
	got, err := ResolveShell("bash")
	var none *NoShellError
	switch {
	case bashErr == nil && (got != "/bin/bash" || err != nil):
		t.Errorf("bash: %q, %v", got, err)
	case bashErr != nil && (!errors.As(err, &none) || none.Error() != "no usable shell (/bin/bash)"):
		t.Errorf("bash without /bin/bash: %q, %v", got, err)
	}
}
