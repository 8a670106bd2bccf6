package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want Info
		str  string
	}{
		{"checkout", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-27T00:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			Info{Version: "(devel)", Revision: "abc123", Time: "2026-11-27T00:00:00Z", Modified: true, Go: "go1.26.0"},
			"module (devel), revision abc123 (modified), go1.26.0"},
		{"release", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}},
			Info{Version: "v1.2.3", Go: "go1.26.0"}, "module v1.2.3, go1.26.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := fromBuildInfo(&tc.bi)
			if got != tc.want {
				t.Errorf("fromBuildInfo = %+v, want %+v", got, tc.want)
			}
			if got.String() != tc.str {
				t.Errorf("String = %q, want %q", got.String(), tc.str)
			}
		})
	}
}

func TestReadInTest(t *testing.T) {
	if got := Read(); got.Go == "" || got.Version == "" {
		t.Errorf("Read() = %+v: a test binary records its Go version and main module", got)
	}
}
