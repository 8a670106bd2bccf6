package daemon

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// Readiness (GET /health?ready=1): what a load balancer or a Kubernetes
// readinessProbe asks before sending work. It fails when the workspace root
// is not a directory or not writable, or when a command cannot run under
// the isolation in force (a bwrap that stopped working: no user
// namespaces left, /tmp full, …), so a replica that would fail every
// request is taken out of rotation instead of answering errors.
const (
	// readyTTL is how long a result is reused: the checks write a file and
	// run a command, and /health needs no token, so a flood of probes
	// costs at most one round of checks per readyTTL.
	readyTTL = 2 * time.Second
	// readyTimeout bounds one round of checks.
	readyTimeout = 5 * time.Second
	// readyOK is the value of a check that passed.
	readyOK = "ok"
)

// readyChecks is the "checks" object of the readiness answer: "ok", or
// why the check failed (an errno's text or an error code: never a host
// path).
type readyChecks struct {
	Workspace string `json:"workspace"`
	Isolation string `json:"isolation"`
}

func (c readyChecks) ok() bool { return c.Workspace == readyOK && c.Isolation == readyOK }

// readiness runs the checks, at most once per readyTTL, and logs each
// change of the outcome (the full errors go to the log only).
type readiness struct {
	rootDir string
	local   *agentbe.Local
	log     *slog.Logger
	ttl     time.Duration // readyTTL; tests change it

	mu     sync.Mutex
	at     time.Time // when last was computed; zero before the first round
	last   readyChecks
	failed bool // the last round failed (a change is logged)
}

func newReadiness(rootDir string, local *agentbe.Local, log *slog.Logger) *readiness {
	return &readiness{rootDir: rootDir, local: local, log: log, ttl: readyTTL}
}

// check returns the current outcome. Concurrent callers wait for the one
// round in progress; a caller's cancelled request does not cancel it.
func (r *readiness) check(context.Context) readyChecks {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.at.IsZero() && time.Since(r.at) < r.ttl {
		return r.last
	}
	ctx, cancel := context.WithTimeout(internal(context.Background()), readyTimeout)
	defer cancel()
	wsErr := checkWorkspace(r.rootDir)
	isoErr := r.checkIsolation(ctx)
	c := readyChecks{Workspace: readyOK, Isolation: readyOK}
	if wsErr != nil {
		c.Workspace = workspaceReason(wsErr)
	}
	if isoErr != nil {
		c.Isolation = isolationReason(r.local.Isolation(), isoErr)
	}
	r.last, r.at = c, time.Now()
	switch {
	case !c.ok() && !r.failed:
		r.log.Warn("daemon: not ready: requests will fail until this is fixed",
			"workspace", errString(wsErr), "isolation", string(r.local.Isolation()), "isolationErr", errString(isoErr))
	case c.ok() && r.failed:
		r.log.Info("daemon: ready again")
	}
	r.failed = !c.ok()
	return c
}

// checkIsolation runs "exit 0" the way every command runs (same shell,
// same sandbox, in the workspace root).
func (r *readiness) checkIsolation(ctx context.Context) error {
	_, err := r.local.Exec(ctx, "exit 0", agentbe.ExecOptions{})
	return err
}

// errNotDir is the workspace check's error for a root that is not a
// directory.
var errNotDir = errors.New("not a directory")

// checkWorkspace checks that dir is a directory in which a file can be
// created, written and removed. The file is named like an atomic write's
// temporary file, so one left behind by a crash is removed by the start-up
// sweep (agentbe.Local.RemoveStaleTemps).
func checkWorkspace(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errNotDir
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	name := readyFileName()
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte("ready\n"))
	cerr := f.Close()
	rerr := root.Remove(name)
	return errors.Join(werr, cerr, rerr)
}

// readyFileName is ".agentbe-ready.<13 base-36 digits>.tmp".
func readyFileName() string {
	n := strconv.FormatUint(rand.Uint64(), 36)
	return ".agentbe-ready." + strings.Repeat("0", 13-len(n)) + n + ".tmp"
}

// workspaceReason is the public text of a workspace failure: the errno's
// text (the root's path is in /health already; nothing else is shown).
func workspaceReason(err error) string {
	var errno syscall.Errno
	switch {
	case errors.Is(err, errNotDir):
		return "the workspace root is not a directory"
	case errors.Is(err, os.ErrNotExist):
		return "the workspace root does not exist"
	case errors.As(err, &errno):
		return "the workspace root is not writable: " + errno.Error()
	}
	return "the workspace root is not writable"
}

// isolationReason is the public text of an isolation failure: the mode
// and the error's code, whose details (paths of the host) go to the log.
func isolationReason(mode agentbe.Isolation, err error) string {
	msg := "commands cannot run under isolation " + string(mode)
	var ae *agentbe.Error
	if errors.As(err, &ae) && ae.Code != "" {
		msg += " (" + string(ae.Code) + ")"
	}
	return msg
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
