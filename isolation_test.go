package agentbe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/internal/sandbox"
	"github.com/agentbe/agent-backend/internal/testenv"
)

func TestSelectSandbox(t *testing.T) {
	usable := func() (sandbox.Sandbox, error) { return fakeBwrap{}, nil }
	unusable := func() (sandbox.Sandbox, error) {
		return nil, errors.New("probe sandbox failed: bwrap: No permissions to create a new namespace")
	}
	tests := []struct {
		mode     Isolation
		probe    func() (sandbox.Sandbox, error)
		want     Isolation
		wantCode ErrorCode
		wantLog  string
	}{
		{"", usable, IsolationBwrap, "", "bwrap"},
		{IsolationAuto, usable, IsolationBwrap, "", "bwrap"},
		{IsolationAuto, unusable, IsolationSoftware, "", "software"},
		{"", unusable, IsolationSoftware, "", "software"},
		{IsolationBwrap, usable, IsolationBwrap, "", ""},
		{IsolationBwrap, unusable, "", CodeMissingUtilities, ""},
		{IsolationSoftware, usable, IsolationSoftware, "", ""},
		{IsolationNone, usable, IsolationNone, "", ""},
		{"chroot", usable, "", CodeInvalidConfiguration, ""},
	}
	for _, tt := range tests {
		var logged []string
		sb, err := selectSandbox(tt.mode, tt.probe, func(m Isolation, reason string) {
			logged = append(logged, string(m)+": "+reason)
		})
		name := string(tt.mode) + "/" + string(tt.want)
		if tt.wantCode != "" {
			if CodeOf(err) != tt.wantCode {
				t.Errorf("%s: err = %v, want code %s", name, err, tt.wantCode)
			}
			if tt.wantCode == CodeMissingUtilities && (!errors.Is(err, ErrMissingUtility) || !strings.Contains(err.Error(), "No permissions")) {
				t.Errorf("%s: error %v lacks sentinel or reason", name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if Isolation(sb.Mode()) != tt.want {
			t.Errorf("%s: mode %s", name, sb.Mode())
		}
		switch {
		case tt.wantLog == "" && len(logged) != 0:
			t.Errorf("%s: unexpected log %v", name, logged)
		case tt.wantLog != "" && (len(logged) != 1 || !strings.HasPrefix(logged[0], tt.wantLog+": ")):
			t.Errorf("%s: log %v, want one line choosing %s", name, logged, tt.wantLog)
		}
		if tt.want == IsolationSoftware && tt.wantLog != "" && !strings.Contains(logged[0], "No permissions") {
			t.Errorf("%s: log %q does not say why", name, logged[0])
		}
	}
}

// fakeBwrap stands for a usable bwrap sandbox.
type fakeBwrap struct{}

func (fakeBwrap) Mode() sandbox.Mode { return sandbox.Bwrap }
func (fakeBwrap) Launcher() string   { return "/usr/bin/bwrap" }
func (fakeBwrap) Command(context.Context, sandbox.Spec) (*sandbox.Cmd, error) {
	return nil, errors.New("fake")
}

// requireBwrap returns the cached probe result, skipping the test when bwrap
// is unusable here, unless CI is set: CI installs bubblewrap, so there an
// unusable bwrap fails the test.
func requireBwrap(t testing.TB) sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.NewBwrap()
	if err != nil {
		testenv.Require(t, false, fmt.Sprintf("a usable bwrap (%v)", err))
	}
	return sb
}

// TestAutoFallbackIsLoud: auto falling back to software warns once, naming
// what is and is not confined; choosing bwrap is an Info line.
func TestAutoFallbackIsLoud(t *testing.T) {
	var buf bytes.Buffer
	lg := slog.New(slog.NewTextHandler(&buf, nil))
	logAutoChoice(lg, IsolationSoftware, "bwrap not found in PATH")
	out := buf.String()
	for _, want := range []string{"level=WARN", "isolation=software", "bwrap not found", "unsandboxed", "file tools stay jailed"} {
		if !strings.Contains(out, want) {
			t.Errorf("warning lacks %q: %s", want, out)
		}
	}
	buf.Reset()
	logAutoChoice(lg, IsolationBwrap, "probe ok")
	if !strings.Contains(buf.String(), "level=INFO") {
		t.Errorf("bwrap choice: %s", buf.String())
	}
}
