package agentbe

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbe/agent-backend/internal/cgroup"
)

// CodeLimitExceeded is not in the spec's table: a command was stopped by
// one of its resource limits (see ResourceLimits and ErrLimitExceeded).
const CodeLimitExceeded ErrorCode = "LIMIT_EXCEEDED"

// ErrLimitExceeded is matched (errors.Is) by the error of a command that a
// resource limit stopped; the *LimitError in its chain names the limit.
var ErrLimitExceeded = errors.New("resource limit exceeded")

// The limits a LimitError names.
const (
	LimitMemory    = "memory"
	LimitProcesses = "processes"
	LimitCPU       = "cpu"
	LimitTime      = "time"
)

// LimitError says which limit stopped a command. Its text starts with the
// code, LIMIT_EXCEEDED, because clients that see only text (an MCP error
// result, an SSH command's standard error) must be able to tell it.
type LimitError struct {
	// Limit is LimitMemory, LimitProcesses or LimitTime (LimitCPU is
	// never a cause of its own: CPU limits slow a command down and are
	// named in Detail when a throttled command ran out of time).
	Limit string
	// Detail gives the limits that applied, e.g. "256 MiB per command".
	Detail string
}

func (e *LimitError) Error() string {
	msg := string(CodeLimitExceeded) + ": " + e.Limit + " limit exceeded"
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg + "; the command was stopped"
}

// Is matches ErrLimitExceeded.
func (e *LimitError) Is(target error) bool { return target == ErrLimitExceeded }

// ResourceLimits bound what commands may use. The zero value of each
// field means no limit for that item; the zero ResourceLimits limits
// nothing (commands share this process's resources, as they did before
// limits existed).
//
// Memory, processes and CPU are enforced by the kernel, with a control
// group (cgroup v1 or v2) around the command's sandbox that the command is
// in before its first instruction runs. Asking for them where cgroups
// cannot be used (none mounted, a controller missing, the hierarchy not
// writable) is an error when the backend or group is made, never ignored.
// A command that runs into a limit is stopped and fails with
// LIMIT_EXCEEDED (ErrLimitExceeded, a *LimitError naming it). See
// docs/limits.md.
type ResourceLimits struct {
	// MemoryBytes bounds memory (and swap): the kernel kills a process of
	// the command that needs more, and then the whole command is stopped.
	MemoryBytes int64
	// Pids bounds the number of processes and threads at once: a fork
	// beyond it fails, and then the whole command is stopped.
	Pids int
	// CPU bounds CPU time as a share of cores (a CFS quota: 0.5 is half a
	// core, 2 two cores' worth per period). A command at its quota is
	// slowed down, never stopped for it.
	CPU float64
	// Timeout bounds wall time: the command is killed when it has run
	// that long.
	Timeout time.Duration
}

// IsZero reports whether l limits nothing.
func (l ResourceLimits) IsZero() bool { return l == ResourceLimits{} }

// over returns l with every zero field taken from base.
func (l ResourceLimits) over(base ResourceLimits) ResourceLimits {
	if l.MemoryBytes == 0 {
		l.MemoryBytes = base.MemoryBytes
	}
	if l.Pids == 0 {
		l.Pids = base.Pids
	}
	if l.CPU == 0 {
		l.CPU = base.CPU
	}
	if l.Timeout == 0 {
		l.Timeout = base.Timeout
	}
	return l
}

func (l ResourceLimits) cgroup() cgroup.Limits {
	return cgroup.Limits{MemoryBytes: l.MemoryBytes, Pids: l.Pids, CPU: l.CPU}
}

func (l ResourceLimits) validate() error {
	if l.Timeout < 0 {
		return errors.New("timeout must not be negative")
	}
	return l.cgroup().Validate()
}

// hostCgroups finds this host's cgroups (a variable for tests).
var hostCgroups = cgroup.Host

// limitsChecker remembers which cgroup limits were found enforceable, so
// that a scope made per request does not probe the cgroup file system
// every time.
type limitsChecker struct {
	mu sync.Mutex
	ok map[cgroup.Limits]bool
}

// check returns the cgroup manager if l can be enforced (nil, nil when l
// needs no cgroup).
func (c *limitsChecker) check(l ResourceLimits) (*cgroup.Manager, error) {
	if err := l.validate(); err != nil {
		return nil, configErr("resource limits: "+err.Error(), nil)
	}
	cl := l.cgroup()
	if cl.IsZero() {
		return nil, nil
	}
	m, err := hostCgroups()
	if err != nil {
		return nil, configErr(err.Error(), err)
	}
	c.mu.Lock()
	ok := c.ok[cl]
	c.mu.Unlock()
	if ok {
		return m, nil
	}
	if err := m.Check(cl); err != nil {
		return nil, configErr(err.Error(), err)
	}
	c.mu.Lock()
	if c.ok == nil {
		c.ok = map[cgroup.Limits]bool{}
	}
	c.ok[cl] = true
	c.mu.Unlock()
	return m, nil
}

// ResourceGroup bounds the sum of the commands of every scope made with it
// (ScopeOptions.Group): a tenant's, typically. Its memory, process and
// CPU limits hold for all of its running commands together; its Timeout
// applies to each command (wall time does not add up). Make one with
// Local.NewResourceGroup; Close it when it is no longer needed (Destroy of
// its Local closes it too).
type ResourceGroup struct {
	local   *Local
	name    string
	mu      sync.Mutex
	limits  ResourceLimits
	cg      *cgroup.Group // nil while the limits need no cgroup
	untrack func()
	once    sync.Once
	closed  chan struct{}
}

// NewResourceGroup makes the group name (1 to 64 letters, digits, '.',
// '_' or '-', not starting with '.', '-' or "cmd-"; unique in the
// process) whose limits bound the sum of its commands. Limits that cannot
// be enforced are an INVALID_CONFIGURATION error.
func (l *Local) NewResourceGroup(name string, limits ResourceLimits) (*ResourceGroup, error) {
	if err := l.alive("group", ""); err != nil {
		return nil, err
	}
	m, err := l.limitsCheck.check(limits)
	if err != nil {
		return nil, err
	}
	g := &ResourceGroup{local: l, name: name, limits: limits, closed: make(chan struct{})}
	if m != nil {
		if g.cg, err = m.NewGroup(name, limits.cgroup()); err != nil {
			return nil, configErr("resource group: "+err.Error(), err)
		}
	}
	g.untrack = l.life.track(groupCloser{g})
	return g, nil
}

// groupCloser lets Destroy close a group without racing its untrack.
type groupCloser struct{ g *ResourceGroup }

func (c groupCloser) Close() error { return c.g.close(false) }

// Name is the group's name.
func (g *ResourceGroup) Name() string { return g.name }

// Limits are the group's limits.
func (g *ResourceGroup) Limits() ResourceLimits {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limits
}

// SetLimits changes the group's limits (a reloaded tenant's, say). Running
// commands stay in the group under the new limits, except that a new
// Timeout applies to commands started afterwards. Limits that cannot be
// enforced are an INVALID_CONFIGURATION error and change nothing.
func (g *ResourceGroup) SetLimits(limits ResourceLimits) error {
	if g.isClosed() {
		return configErr("the resource group is closed", nil)
	}
	m, err := g.local.limitsCheck.check(limits)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.cg != nil:
		if err := g.cg.SetLimits(limits.cgroup()); err != nil {
			return configErr("resource group: "+err.Error(), err)
		}
	case m != nil:
		if g.cg, err = m.NewGroup(g.name, limits.cgroup()); err != nil {
			return configErr("resource group: "+err.Error(), err)
		}
	}
	g.limits = limits
	return nil
}

// cgroupGroup is the group's cgroup (nil for none).
func (g *ResourceGroup) cgroupGroup() *cgroup.Group {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cg
}

// Close kills the group's commands that still run (they fail) and removes
// its cgroups. Scopes made with it can no longer run commands. Idempotent.
func (g *ResourceGroup) Close() error { return g.close(true) }

func (g *ResourceGroup) close(untrack bool) error {
	var err error
	g.once.Do(func() {
		close(g.closed)
		if untrack {
			g.untrack()
		}
		if cg := g.cgroupGroup(); cg != nil {
			err = cg.Close()
		}
	})
	return err
}

func (g *ResourceGroup) isClosed() bool {
	select {
	case <-g.closed:
		return true
	default:
		return false
	}
}

// Network is what network commands reach.
type Network string

// Network modes.
const (
	// NetworkHost shares this host's network: commands reach everything
	// the process does, its own listening ports, loopback services and
	// cloud metadata endpoints included. The default ("").
	NetworkHost Network = "host"
	// NetworkNone gives each command an empty network namespace of its
	// own (only a loopback interface of its own). It needs the bwrap
	// isolation mode.
	NetworkNone Network = "none"
)

// validNetwork refuses an unknown network mode.
func validNetwork(n Network) error {
	switch n {
	case "", NetworkHost, NetworkNone:
		return nil
	}
	return configErr("unknown network mode "+string(n)+" (use host or none)", nil)
}

// errTimeLimit is the cause of a context ended by a Timeout limit.
var errTimeLimit = errors.New("time limit")

// formatBytes writes n as KiB, MiB or GiB when it is a whole number of
// them.
func formatBytes(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return strconv.FormatInt(n/u.v, 10) + " " + u.s
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// limitDetail describes the limits of one kind that applied to a command:
// its own and its group's.
func limitDetail(kind string, own ResourceLimits, g *ResourceGroup) string {
	var parts []string
	add := func(l ResourceLimits, who string) {
		var v string
		switch kind {
		case LimitMemory:
			if l.MemoryBytes > 0 {
				v = formatBytes(l.MemoryBytes)
			}
		case LimitProcesses:
			if l.Pids > 0 {
				v = strconv.Itoa(l.Pids)
			}
		case LimitCPU:
			if l.CPU > 0 {
				v = strconv.FormatFloat(l.CPU, 'g', -1, 64) + " cores"
			}
		case LimitTime:
			if l.Timeout > 0 {
				v = l.Timeout.String()
			}
		}
		if v != "" {
			parts = append(parts, v+" "+who)
		}
	}
	add(own, "per command")
	if g != nil {
		add(g.Limits(), fmt.Sprintf("for group %q", g.name))
	}
	return strings.Join(parts, ", ")
}

// timeoutWith is the wall-time limit of a command with limits l in group
// g: the smaller one set.
func (l ResourceLimits) timeoutWith(g *ResourceGroup) time.Duration {
	t := l.Timeout
	if g == nil {
		return t
	}
	if gt := g.Limits().Timeout; gt > 0 && (t == 0 || gt < t) {
		t = gt
	}
	return t
}

// commandCgroup makes the cgroup of a command with limits lim in group g,
// or returns nil when neither needs one.
func (l *Local) commandCgroup(lim ResourceLimits, g *ResourceGroup) (*cgroup.Command, error) {
	var gc *cgroup.Group
	if g != nil {
		gc = g.cgroupGroup()
	}
	if lim.cgroup().IsZero() && gc == nil {
		return nil, nil
	}
	m, err := hostCgroups()
	if err != nil {
		return nil, err
	}
	return m.NewCommand(gc, lim.cgroup())
}

// scrubCgroup is err's text without the host's cgroup directories.
func scrubCgroup(err error) string {
	if m, merr := hostCgroups(); merr == nil {
		return m.Scrub(err)
	}
	return err.Error()
}

// hitOf names the limit cg's counters say the command ran into, if any
// (for a command that failed: its group's refused forks count too).
func hitOf(cg *cgroup.Command) string {
	if h := ownHit(cg); h != "" || cg == nil {
		return h
	}
	if cg.GroupHit() {
		return LimitProcesses
	}
	return ""
}

// ownHit names the limit cg's own counters say the command ran into.
func ownHit(cg *cgroup.Command) string {
	if cg == nil {
		return ""
	}
	switch cg.Hit() {
	case cgroup.HitMemory:
		return LimitMemory
	case cgroup.HitProcesses:
		return LimitProcesses
	}
	return ""
}

// limitError is the LIMIT_EXCEEDED error of a command that limit stopped.
// A command that ran out of time while its CPU quota throttled it says so.
func limitError(command, limit string, lim ResourceLimits, g *ResourceGroup, cg *cgroup.Command) error {
	detail := limitDetail(limit, lim, g)
	if limit == LimitTime && cg != nil {
		if st := cg.CPU(); st.Throttled > 0 {
			detail += "; it was throttled by its " + LimitCPU + " limit (" + limitDetail(LimitCPU, lim, g) + ")"
		}
	}
	return &Error{Code: CodeLimitExceeded, Op: "exec", Command: command, Backend: KindLocal,
		Err: &LimitError{Limit: limit, Detail: detail}}
}

// limitPoll is how often a running command's cgroup is checked for a
// limit it ran into.
const limitPoll = 50 * time.Millisecond

// limitMonitor stops a command as soon as its cgroup reports a limit it
// ran into (an out-of-memory kill of one of its processes, a fork refused):
// the rest of the command would otherwise go on, or retry forever.
type limitMonitor struct {
	done chan struct{}
	out  chan string
}

// watchLimits starts watching cg (nil: nothing to watch).
func watchLimits(cg *cgroup.Command) *limitMonitor {
	if cg == nil {
		return nil
	}
	m := &limitMonitor{done: make(chan struct{}), out: make(chan string, 1)}
	go func() {
		t := time.NewTicker(limitPoll)
		defer t.Stop()
		for {
			select {
			case <-m.done:
				m.out <- ""
				return
			case <-t.C:
				if hit := ownHit(cg); hit != "" {
					cg.Kill()
					m.out <- hit
					return
				}
			}
		}
	}()
	return m
}

// stop ends the watch and returns the limit it stopped the command for
// ("" if none).
func (m *limitMonitor) stop() string {
	if m == nil {
		return ""
	}
	close(m.done)
	return <-m.out
}
