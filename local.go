package agentbe

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/agentbe/agent-backend/internal/cgroup"
	"github.com/agentbe/agent-backend/internal/sandbox"
	"github.com/agentbe/agent-backend/internal/wspath"
)

// Shell selects the shell commands run in.
type Shell string

// Shell preferences. The zero value ("") means ShellAuto.
const (
	ShellAuto Shell = "auto" // /bin/bash if present, else /bin/sh
	ShellBash Shell = "bash"
	ShellSh   Shell = "sh"
)

// LocalConfig configures a Local backend. Only RootDir is required; the zero
// value of every other field is the safe default.
type LocalConfig struct {
	// RootDir is the workspace directory. It is created (0755) if missing
	// and resolved to an absolute path.
	RootDir string
	// Isolation sandboxes commands; "" means IsolationAuto.
	Isolation Isolation
	// Shell selects the shell; "" means ShellAuto. It is resolved once, at
	// construction.
	Shell Shell
	// AllowDangerous turns off the dangerous-command check. By default every
	// command is checked with CheckCommand before it runs, whatever the
	// isolation mode; its workspace-escape class (cd, $HOME, "..") only
	// where the mode does not confine commands (not under bwrap; see
	// SafetyPolicy).
	AllowDangerous bool
	// Safety adds patterns to the dangerous-command check. Its Confined is
	// ignored: the isolation mode decides it.
	Safety SafetyPolicy
	// MaxOutputBytes truncates collected stdout to that many bytes and
	// appends a note giving the original length; zero means
	// DefaultMaxOutputBytes. Streaming writers (ExecOptions.Stdout) are never
	// capped.
	MaxOutputBytes int
	// MaxReadBytes bounds whole-file reads: Read, ReadFile through FS and
	// the MCP tools that read a file into memory fail with an error
	// wrapping ErrTooLarge (naming the limit) on a larger file, before
	// allocating for it. Zero means DefaultMaxReadBytes; Open streams any
	// size.
	MaxReadBytes int64
	// Env is added to every command's environment, over the clean base that
	// every isolation mode starts from (see Local.Exec).
	Env map[string]string
	// InheritEnv starts commands from this process's whole environment
	// instead of the clean base. Off by default: the process's variables
	// (an auth token, cloud credentials) would reach every command.
	InheritEnv bool
	// Logger receives operations; nil logs nothing.
	Logger OpLogger
	// LogMode selects the operations Logger receives.
	LogMode LogMode
	// Limits bound each command (see ResourceLimits); the zero value
	// limits nothing. A scope's ScopeOptions.Limits override them field by
	// field, and ScopeOptions.Group adds a bound on the sum of a group's
	// commands. NewLocal fails if they cannot be enforced here.
	Limits ResourceLimits
	// Network is what commands reach: NetworkHost ("", the default) or
	// NetworkNone, which needs the bwrap isolation mode (NewLocal fails
	// otherwise). ScopeOptions.Network overrides it for a scope.
	Network Network
}

// Local is a backend on a local directory. File operations go through an
// *os.Root opened on the workspace, so symbolic links can never lead outside
// it; commands run through the configured shell and isolation.
type Local struct {
	cfg     LocalConfig
	rootDir string // absolute, as configured
	life    *lifecycle
	jail    *jail
	shell   string
	sb      sandbox.Sandbox
	checker *SafetyChecker
	log     opLog
	scopes  *scopeSet
	view    bool // an internal view of a sub-directory, used by scopes

	// The resources and network of this backend's (or view's) commands:
	// per-command limits, the group bounding their sum (nil for none), and
	// the network mode ("" or NetworkHost: the host's).
	limits      ResourceLimits
	group       *ResourceGroup
	network     Network
	limitsCheck *limitsChecker
	// cgroupDone, when set (tests), sees each command's cgroup before it
	// is removed.
	cgroupDone func(*cgroup.Command)
}

var _ Backend = (*Local)(nil)

// NewLocal validates cfg and opens the workspace. It fails with an *Error
// of code INVALID_CONFIGURATION (bad config, unusable RootDir) or
// MISSING_UTILITIES (no shell, or bwrap requested but unusable).
func NewLocal(cfg LocalConfig) (*Local, error) {
	if cfg.RootDir == "" {
		return nil, configErr("RootDir is required", nil)
	}
	if cfg.MaxOutputBytes < 0 {
		return nil, configErr("MaxOutputBytes must not be negative", nil)
	}
	if cfg.MaxReadBytes < 0 {
		return nil, configErr("MaxReadBytes must not be negative", nil)
	}
	switch cfg.Isolation {
	case "", IsolationAuto, IsolationBwrap, IsolationSoftware, IsolationNone:
	default:
		return nil, configErr("unknown isolation mode "+string(cfg.Isolation), nil)
	}
	if err := validNetwork(cfg.Network); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(cfg.RootDir)
	if err != nil {
		return nil, configErr("RootDir", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, configErr("cannot create RootDir", err)
	}
	shell, err := resolveShell(cfg.Shell)
	if err != nil {
		return nil, err
	}
	sb, err := newSandbox(cfg.Isolation)
	if err != nil {
		return nil, err
	}
	if cfg.Network == NetworkNone && sb.Mode() != sandbox.Bwrap {
		return nil, configErr("network mode none needs the bwrap isolation mode (commands run unconfined in "+
			string(sb.Mode())+" mode)", nil)
	}
	checker := &limitsChecker{}
	if _, err := checker.check(cfg.Limits); err != nil {
		return nil, err
	}
	// The workspace-escape class of the check applies where no kernel
	// confinement keeps commands in the workspace (see SafetyPolicy).
	policy := cfg.Safety
	policy.Confined = sb.Mode() == sandbox.Bwrap
	safety, err := NewSafetyChecker(policy)
	if err != nil {
		return nil, err
	}
	life := newLifecycle(StatusConnected)
	j, err := openRootJail(abs, life)
	if err != nil {
		return nil, configErr("cannot open RootDir", err)
	}
	return &Local{
		cfg: cfg, rootDir: abs, life: life, jail: j, shell: shell, sb: sb, checker: safety,
		log: opLog{logger: cfg.Logger, mode: cfg.LogMode}, scopes: newScopeSet(),
		limits: cfg.Limits, network: cfg.Network, limitsCheck: checker,
	}, nil
}

func configErr(msg string, err error) error {
	if err == nil {
		err = ErrInvalidConfig
	} else {
		err = &wrapped{msg: "invalid configuration", err: err, is: ErrInvalidConfig}
	}
	return &Error{Code: CodeInvalidConfiguration, Op: "config", Reason: msg, Err: err}
}

// Kind reports KindLocal.
func (l *Local) Kind() Kind { return KindLocal }

// RootDir returns the absolute workspace directory.
func (l *Local) RootDir() string { return l.rootDir }

// Status reports StatusConnected until Destroy, then StatusDestroyed.
func (l *Local) Status() Status { return l.life.Status() }

// OnStatusChange subscribes fn to status transitions.
func (l *Local) OnStatusChange(fn func(old, new Status)) func() { return l.life.OnStatusChange(fn) }

// Track registers c to be closed by Destroy and returns the function that
// unregisters it; see Backend.
func (l *Local) Track(c io.Closer) (untrack func()) { return l.life.track(c) }

// Isolation reports the effective isolation mode (auto resolved).
func (l *Local) Isolation() Isolation { return Isolation(l.sb.Mode()) }

// Destroy closes every tracked resource (MCP clients, the workspace root
// handle) and moves to StatusDestroyed. Scopes are not destroyed: they
// become orphans whose operations fail with ErrDestroyed.
func (l *Local) Destroy(ctx context.Context) error {
	if l.view {
		return nil
	}
	return l.life.destroy()
}

// Scope returns a view restricted to the sub-directory p.
func (l *Local) Scope(p string, opts ScopeOptions) (*Scope, error) {
	if err := l.alive("scope", p); err != nil {
		return nil, err
	}
	return newScope(l, p, opts)
}

// subtree returns an internal Local confined to the directory rel: its own
// *os.Root, so links inside it cannot reach sibling directories.
func (l *Local) subtree(rel string) Backend {
	c := *l
	c.jail = l.jail.sub(rel)
	c.rootDir = wspath.Join(l.rootDir, rel)
	c.log = opLog{}
	c.view = true
	c.scopes = nil
	return &c
}

func (l *Local) scopeSet() *scopeSet { return l.scopes }

// confine applies a scope's limits, group and network to the view l (made
// by subtree for that scope). An unknown network, none without bwrap,
// limits that cannot be enforced, or a group of another backend (or
// closed) are INVALID_CONFIGURATION errors.
func (l *Local) confine(opts ScopeOptions) error {
	if err := validNetwork(opts.Network); err != nil {
		return err
	}
	if opts.Network == NetworkNone && l.sb.Mode() != sandbox.Bwrap {
		return configErr("network mode none needs the bwrap isolation mode", nil)
	}
	if opts.Group != nil {
		if opts.Group.local.life != l.life {
			return configErr("the resource group belongs to another backend", nil)
		}
		if opts.Group.isClosed() {
			return configErr("the resource group is closed", nil)
		}
		l.group = opts.Group
	}
	if !opts.Limits.IsZero() {
		lim := opts.Limits.over(l.limits)
		if _, err := l.limitsCheck.check(lim); err != nil {
			return err
		}
		l.limits = lim
	}
	if opts.Network != "" {
		l.network = opts.Network
	}
	return nil
}

// release closes the *os.Root of a view (a destroyed scope's directory).
func (l *Local) release() {
	if l.view {
		l.jail.close()
	}
}

// alive fails once the backend is destroyed.
func (l *Local) alive(op, p string) error {
	if l.life.dead() {
		return &Error{Code: CodeDestroyed, Op: op, Path: p, Backend: KindLocal, Err: ErrDestroyed}
	}
	return nil
}

// scopeSet records a backend's live child scopes.
type scopeSet struct {
	mu sync.Mutex
	m  map[*Scope]struct{}
}

func newScopeSet() *scopeSet { return &scopeSet{m: map[*Scope]struct{}{}} }

func (s *scopeSet) add(c *Scope) {
	s.mu.Lock()
	s.m[c] = struct{}{}
	s.mu.Unlock()
}

func (s *scopeSet) remove(c *Scope) {
	s.mu.Lock()
	delete(s.m, c)
	s.mu.Unlock()
}

func (s *scopeSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// wrapped is an error with its own message that matches a sentinel.
type wrapped struct {
	msg string
	err error
	is  error
}

func (w *wrapped) Error() string   { return w.msg + ": " + w.err.Error() }
func (w *wrapped) Unwrap() []error { return []error{w.err, w.is} }
