package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/agentbe/agent-backend/internal/procs"
)

// NewBwrap returns the bwrap sandbox once bwrap is usable here: installed,
// and a probe sandbox, built exactly like a command's, actually runs
// (inside many containers bwrap exists but cannot create namespaces).
// Otherwise it reports why not. The probe runs once per process; its result
// is cached.
func NewBwrap() (Sandbox, error) {
	l, err := detectBwrap()
	if err != nil {
		return nil, err
	}
	return newBwrapSandbox(l), nil
}

// newBwrapSandbox returns the bwrap sandbox for layout l; the probe has
// already built the seccomp filter, so it cannot fail here.
func newBwrapSandbox(l bwrapLayout) bwrapSandbox {
	filter, _ := seccompFilter()
	return bwrapSandbox{layout: l, seccomp: filter}
}

// WithoutBindFD returns sb, a bwrap sandbox, in the layout of a bwrap that
// predates --bind-fd (see bwrapArgv), so that tests run it on a newer
// bwrap, which accepts both.
func WithoutBindFD(sb Sandbox) Sandbox {
	b := sb.(bwrapSandbox)
	b.layout.noBindFD = true
	return b
}

var bwrapProbe struct {
	once   sync.Once
	layout bwrapLayout
	err    error
}

// detectBwrap finds bwrap on PATH and checks, once per process, that it can
// build the sandbox commands will run in.
func detectBwrap() (bwrapLayout, error) {
	bwrapProbe.once.Do(func() {
		if runtime.GOOS != "linux" {
			bwrapProbe.err = errors.New("bwrap requires Linux")
			return
		}
		p, err := exec.LookPath("bwrap")
		if err != nil {
			bwrapProbe.err = errors.New("bwrap not found in PATH")
			return
		}
		bwrapProbe.layout, bwrapProbe.err = probeBwrap(p)
	})
	return bwrapProbe.layout, bwrapProbe.err
}

// probeTimeout bounds the probe sandbox.
const probeTimeout = 10 * time.Second

// probeBwrap runs "exit 0" in a sandbox built exactly like a command's
// (seccomp filter, workspace bound by descriptor), on an empty temporary
// workspace, and reports why it failed. A bwrap without --bind-fd (before
// 0.8.0) is probed again in the layout that binds /proc/self/fd/N instead
// (see bwrapArgv).
func probeBwrap(bwrap string) (bwrapLayout, error) {
	host := hostBwrapLayout(bwrap)
	l, err := probeBwrapLayout(host)
	if err != nil && strings.Contains(err.Error(), "--bind-fd") {
		host.noBindFD = true
		return probeBwrapLayout(host)
	}
	return l, err
}

// probeBwrapLayout is probeBwrap for one layout.
func probeBwrapLayout(l bwrapLayout) (bwrapLayout, error) {
	if _, err := seccompFilter(); err != nil {
		return l, err
	}
	if st, err := newEtcStage("/"); err == nil {
		l.stage = st
	}
	dropStage := func() {
		if l.stage != nil {
			os.RemoveAll(l.stage.base)
			l.stage = nil
		}
	}
	dir, err := os.MkdirTemp("", "agentbe-bwrap-probe-")
	if err != nil {
		dropStage()
		return l, fmt.Errorf("probe workspace: %w", err)
	}
	defer os.RemoveAll(dir)
	root, err := os.OpenRoot(dir)
	if err != nil {
		dropStage()
		return l, fmt.Errorf("probe workspace: %w", err)
	}
	defer root.Close()
	shell := "/bin/sh"
	if _, err := os.Stat(shell); err != nil {
		dropStage()
		return l, errors.New("probe: no /bin/sh")
	}
	spec := Spec{Shell: shell, Command: "exit 0", Root: root, HostRoot: dir, WorkRel: "."}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	c, err := newBwrapSandbox(l).Command(ctx, spec)
	if err != nil {
		dropStage()
		return l, fmt.Errorf("probe: %w", err)
	}
	out, err := procs.CombinedOutput(c.Cmd)
	c.Done()
	if err != nil {
		dropStage()
		msg := strings.TrimSpace(string(out))
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if msg == "" {
			msg = err.Error()
		}
		return l, fmt.Errorf("probe sandbox failed: %s", msg)
	}
	return l, nil
}
