// Package buildinfo reads what the Go toolchain recorded in the running
// binary: the main module's version, the VCS revision and the Go version.
// /health and the CLI's version command report it.
package buildinfo

import (
	"runtime/debug"
	"strings"
	"sync"
)

// Info describes the binary.
type Info struct {
	// Version is the main module's version: a tag for `go install
	// …@vX.Y.Z`, "(devel)" for a build from a checkout, "unknown" when the
	// binary carries no build information.
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// Read returns the build information of this binary, read once.
var Read = sync.OnceValue(func() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown"}
	}
	return fromBuildInfo(bi)
})

func fromBuildInfo(bi *debug.BuildInfo) Info {
	b := Info{Version: bi.Main.Version, Go: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is one line for humans: "module (devel), revision 0123abc…
// (modified), go1.26.0"; parts the binary does not record are left out.
func (i Info) String() string {
	parts := []string{"module " + i.Version}
	if i.Revision != "" {
		r := "revision " + i.Revision
		if i.Modified {
			r += " (modified)"
		}
		parts = append(parts, r)
	}
	if i.Go != "" {
		parts = append(parts, i.Go)
	}
	return strings.Join(parts, ", ")
}
