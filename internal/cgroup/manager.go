package cgroup

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Top is the directory below this process's own cgroup that holds every
// cgroup of the package; selfLeaf is where, under version 2, this process
// moves itself (see the package comment).
const (
	Top      = "agentbe"
	selfLeaf = "agentbe.self"
)

// Manager makes the cgroups of groups and commands in one hierarchy
// layout. It is safe for concurrent use; a process has one (Host), tests
// make their own over a fake file system.
type Manager struct {
	v2 bool
	// own is this process's cgroup directory per controller (version 1),
	// or under every controller the one unified directory (version 2).
	own map[Controller]string
	// acct is the version 1 cpuacct directory ("" if none), used for the
	// CPU usage of commands with a CPU limit when cpu is mounted apart.
	acct string
	// Version 2: own is the root cgroup (no leaf needed); pid is this
	// process.
	ownIsRoot bool
	pid       int

	// tag tells this Manager's command cgroups from those of another
	// process with the same pid (in another pid namespace) sharing the
	// hierarchy.
	tag string

	mu        sync.Mutex
	delegated map[Controller]bool // version 2: enabled below own and Top
	groups    map[string]*Group
	seq       atomic.Uint64
}

// NewV1 returns the Manager of version 1 hierarchies whose own cgroup
// directories are own (a controller absent from it is missing).
func NewV1(own map[Controller]string) *Manager {
	return &Manager{own: own, groups: map[string]*Group{}, pid: os.Getpid(), tag: newTag()}
}

// NewV2 returns the Manager of the unified hierarchy whose own cgroup
// directory is own; isRoot says whether that is the hierarchy's root (which
// may hold processes and enable controllers at once); pid is the process
// that moves into the leaf otherwise.
func NewV2(own string, isRoot bool, pid int) *Manager {
	m := &Manager{v2: true, own: map[Controller]string{}, ownIsRoot: isRoot, pid: pid,
		groups: map[string]*Group{}, delegated: map[Controller]bool{}, tag: newTag()}
	for _, c := range allControllers {
		m.own[c] = own
	}
	return m
}

// Version is 1 or 2.
func (m *Manager) Version() int {
	if m.v2 {
		return 2
	}
	return 1
}

// Check reports whether l can be enforced: the controllers exist and a
// cgroup with those limits can be made (it is made and removed again).
func (m *Manager) Check(l Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if l.IsZero() {
		return nil
	}
	if err := m.prepare(l.controllers()); err != nil {
		return err
	}
	name := fmt.Sprintf("cmd-probe-%d-%s-%d", m.pid, m.tag, m.seq.Add(1))
	dirs, err := m.makeDirs(m.topDirs(l.controllers()), name, l.controllers())
	if err == nil {
		err = writeLimits(m.v2, dirs, l)
	}
	removeDirs(dirs)
	m.removeTop()
	if err != nil {
		return unavailable("%v", err)
	}
	return nil
}

// prepare makes sure each controller of cs can be used below Top:
// version 1, its hierarchy is mounted; version 2, it is available and
// enabled for Top's children (moving this process into its leaf first).
func (m *Manager) prepare(cs []Controller) error {
	if !m.v2 {
		for _, c := range cs {
			if m.own[c] == "" {
				return unavailable("the %s controller (cgroup v1) is not mounted", c)
			}
		}
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var need []Controller
	for _, c := range cs {
		if !m.delegated[c] {
			need = append(need, c)
		}
	}
	if len(need) == 0 {
		return nil
	}
	own := m.own[Memory]
	avail, err := os.ReadFile(filepath.Join(own, "cgroup.controllers"))
	if err != nil {
		return unavailable("cannot read the cgroup's controllers: %v", err)
	}
	have := strings.Fields(string(avail))
	for _, c := range need {
		if !contains(have, string(c)) {
			return unavailable("the %s controller is not available in this process's cgroup (cgroup v2): delegate it", c)
		}
	}
	if !m.ownIsRoot {
		if err := m.moveSelf(own); err != nil {
			return err
		}
	}
	top := filepath.Join(own, Top)
	if err := os.Mkdir(top, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return unavailable("cannot create a cgroup: %v", err)
	}
	for _, dir := range []string{own, top} {
		if err := enable(dir, need); err != nil {
			return err
		}
	}
	for _, c := range need {
		m.delegated[c] = true
	}
	return nil
}

// moveSelf moves this process into <own>/agentbe.self unless it is there
// (version 2's rule: a cgroup with processes enables no controllers for
// its children).
func (m *Manager) moveSelf(own string) error {
	leaf := filepath.Join(own, selfLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return unavailable("cannot create the cgroup %s: %v", selfLeaf, err)
	}
	if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(m.pid)); err != nil {
		return unavailable("cannot move this process into its own leaf cgroup: %v", err)
	}
	return nil
}

// enable writes "+c" for each controller into dir's cgroup.subtree_control.
func enable(dir string, cs []Controller) error {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("+" + string(c))
	}
	if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), b.String()); err != nil {
		if errors.Is(err, syscall.EBUSY) {
			return unavailable("cannot enable %s for the cgroups below %s: it holds other processes (cgroup v2 allows processes only in leaves)", b.String(), filepath.Base(dir))
		}
		return unavailable("cannot enable %s for child cgroups: %v", b.String(), err)
	}
	return nil
}

// topDirs returns <own>/agentbe of each controller of cs (one directory
// under version 2).
func (m *Manager) topDirs(cs []Controller) []string {
	if m.v2 {
		return []string{filepath.Join(m.own[Memory], Top)}
	}
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, filepath.Join(m.own[c], Top))
	}
	return out
}

// makeDirs makes name in each of parents (Top is made as needed, and, under
// version 2, gets cs enabled). On error, what it made is removed.
func (m *Manager) makeDirs(parents []string, name string, cs []Controller) ([]string, error) {
	var made []string
	for _, p := range parents {
		if filepath.Base(p) == Top {
			if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				removeDirs(made)
				return nil, err
			}
		}
		d := filepath.Join(p, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			removeDirs(made)
			return nil, err
		}
		made = append(made, d)
	}
	return made, nil
}

// writeLimits writes l into dirs (one per controller of l under version 1,
// in the order of l.controllers; the one directory under version 2).
func writeLimits(v2 bool, dirs []string, l Limits) error {
	dirOf := func(i int) string {
		if v2 {
			return dirs[0]
		}
		return dirs[i]
	}
	for i, c := range l.controllers() {
		d := dirOf(i)
		var err error
		switch c {
		case Memory:
			err = writeMemory(v2, d, l.MemoryBytes)
		case Pids:
			err = writeFile(filepath.Join(d, "pids.max"), strconv.Itoa(l.Pids))
		case CPU:
			if v2 {
				err = writeFile(filepath.Join(d, "cpu.max"), fmt.Sprintf("%d %d", cpuQuota(l.CPU), cpuPeriod))
			} else {
				err = writeFile(filepath.Join(d, "cpu.cfs_period_us"), strconv.Itoa(cpuPeriod))
				if err == nil {
					err = writeFile(filepath.Join(d, "cpu.cfs_quota_us"), strconv.FormatInt(cpuQuota(l.CPU), 10))
				}
			}
		}
		if err != nil {
			return fmt.Errorf("cannot set the %s limit: %w", c, err)
		}
	}
	return nil
}

// writeMemory sets a memory limit. Swap counts against it as well where
// the kernel accounts swap (else the limit would only move memory to
// swap), and under version 2 an out-of-memory kill takes the whole
// cgroup. Those two files exist only on some kernels: writing them is
// best effort.
func writeMemory(v2 bool, dir string, n int64) error {
	v := strconv.FormatInt(n, 10)
	if v2 {
		if err := writeFile(filepath.Join(dir, "memory.max"), v); err != nil {
			return err
		}
		_ = writeFile(filepath.Join(dir, "memory.swap.max"), "0")
		_ = writeFile(filepath.Join(dir, "memory.oom.group"), "1")
		return nil
	}
	limit, memsw := filepath.Join(dir, "memory.limit_in_bytes"), filepath.Join(dir, "memory.memsw.limit_in_bytes")
	if !exists(memsw) {
		return writeFile(limit, v)
	}
	// The kernel keeps memsw >= limit: raise memsw first, lower it last.
	if writeFile(memsw, v) == nil {
		return writeFile(limit, v)
	}
	if err := writeFile(limit, v); err != nil {
		return err
	}
	return writeFile(memsw, v)
}

// removeTop removes the Top directories once nothing is left in them
// (another process may still use them: then they stay).
func (m *Manager) removeTop() {
	if m.v2 {
		return // keeps the controllers enabled below it for the next
	}
	for _, c := range allControllers {
		if m.own[c] != "" {
			syscall.Rmdir(filepath.Join(m.own[c], Top))
		}
	}
	if m.acct != "" {
		syscall.Rmdir(filepath.Join(m.acct, Top))
	}
}

// Group is a cgroup whose limits bound the sum of its commands'.
type Group struct {
	m       *Manager
	name    string
	mu      sync.Mutex
	limits  Limits
	dirs    map[Controller]string // made so far (version 1: per hierarchy)
	enabled map[Controller]bool   // version 2: enabled for the group's children
	acct    string                // version 1: the group's cpuacct directory, once made
	closed  bool
}

// NewGroup makes the group name (see validName) with limits l. A name is
// unique in the process; a directory of that name left behind by a
// process that died is removed first when it holds no process.
func (m *Manager) NewGroup(name string, l Limits) (*Group, error) {
	if !validName(name) {
		return nil, fmt.Errorf("invalid group name %q: use 1 to 64 letters, digits, '.', '_' or '-', not starting with '.', '-' or \"cmd-\"", name)
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if err := m.prepare(l.controllers()); err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.groups[name] != nil {
		m.mu.Unlock()
		return nil, fmt.Errorf("resource group %q exists", name)
	}
	g := &Group{m: m, name: name, limits: l, dirs: map[Controller]string{}, enabled: map[Controller]bool{}}
	m.groups[name] = g
	m.mu.Unlock()
	if err := g.ensure(l.controllers()); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// Name is the group's name.
func (g *Group) Name() string { return g.name }

// Limits are the group's limits.
func (g *Group) Limits() Limits {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limits
}

// ensure makes the group's directory in each hierarchy of cs (with the
// group's limits) where it is not yet; under version 2 there is one
// directory, with the controllers of cs enabled for its children.
func (g *Group) ensure(cs []Controller) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errors.New("resource group closed")
	}
	if g.m.v2 {
		d := g.dirs[Memory]
		if d == "" {
			var err error
			if d, err = g.mkdir(filepath.Join(g.m.own[Memory], Top)); err != nil {
				return err
			}
			for _, c := range allControllers {
				g.dirs[c] = d
			}
			if err := writeLimits(true, []string{d}, g.limits); err != nil {
				return unavailable("%v", err)
			}
		}
		var need []Controller
		for _, c := range cs {
			if !g.enabled[c] {
				need = append(need, c)
			}
		}
		if len(need) > 0 {
			if err := enable(d, need); err != nil {
				return err
			}
			for _, c := range need {
				g.enabled[c] = true
			}
		}
		return nil
	}
	for _, c := range cs {
		if g.dirs[c] != "" {
			continue
		}
		d, err := g.mkdir(g.m.topDirs([]Controller{c})[0])
		if err != nil {
			return err
		}
		g.dirs[c] = d
		one := Limits{}
		switch c {
		case Memory:
			one.MemoryBytes = g.limits.MemoryBytes
		case Pids:
			one.Pids = g.limits.Pids
		case CPU:
			one.CPU = g.limits.CPU
		}
		if err := writeLimits(false, []string{d}, one); err != nil {
			return unavailable("%v", err)
		}
	}
	return nil
}

// mkdir makes the group's directory in top. One left behind by a process
// that died is taken over when nothing runs in it (it and its children are
// removed first); one in use is an error.
func (g *Group) mkdir(top string) (string, error) {
	if err := os.Mkdir(top, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", unavailable("cannot create a cgroup: %v", err)
	}
	d := filepath.Join(top, g.name)
	err := os.Mkdir(d, 0o755)
	if errors.Is(err, fs.ErrExist) {
		if rmdirEmpty(d) != nil {
			return "", fmt.Errorf("resource group %q: its cgroup is in use by another process", g.name)
		}
		err = os.Mkdir(d, 0o755)
	}
	if err != nil {
		return "", unavailable("cannot create a cgroup: %v", err)
	}
	return d, nil
}

// rmdirEmpty removes the cgroup d and its children, bottom up, without
// killing anything: it fails on a cgroup that still holds processes.
func rmdirEmpty(d string) error {
	var subs []string
	filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			subs = append(subs, p)
		}
		return nil
	})
	for i := len(subs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(subs[i]); err != nil && err != syscall.ENOENT {
			if err == syscall.ENOTEMPTY && !isCgroupfs(subs[i]) {
				if len(procsOf(subs[i])) > 0 {
					return syscall.EBUSY
				}
				os.RemoveAll(subs[i])
				continue
			}
			return err
		}
	}
	return nil
}

// SetLimits changes the group's limits; its running commands keep
// running (a lowered memory limit may make the kernel reclaim or kill).
// A limit set to zero is lifted.
func (g *Group) SetLimits(l Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if err := g.m.prepare(l.controllers()); err != nil {
		return err
	}
	g.mu.Lock()
	old := g.limits
	g.limits = l
	dirs := map[Controller]string{}
	for c, d := range g.dirs {
		dirs[c] = d
	}
	g.mu.Unlock()
	for _, c := range allControllers {
		d := dirs[c]
		if d == "" {
			continue
		}
		one, was := only(l, c), only(old, c)
		var err error
		switch {
		case !one.IsZero():
			err = writeLimits(g.m.v2, []string{d}, one)
		case !was.IsZero():
			err = liftLimit(g.m.v2, d, c)
		}
		if err != nil {
			return unavailable("%v", err)
		}
	}
	return g.ensure(l.controllers())
}

// only is l's limit of controller c alone.
func only(l Limits, c Controller) Limits {
	switch c {
	case Memory:
		return Limits{MemoryBytes: l.MemoryBytes}
	case Pids:
		return Limits{Pids: l.Pids}
	case CPU:
		return Limits{CPU: l.CPU}
	}
	return Limits{}
}

// liftLimit removes the limit of controller c from the cgroup dir.
func liftLimit(v2 bool, dir string, c Controller) error {
	type w struct{ file, v string }
	var ws []w
	switch {
	case c == Memory && v2:
		ws = []w{{"memory.max", "max"}}
	case c == Memory:
		ws = []w{{"memory.memsw.limit_in_bytes", "-1"}, {"memory.limit_in_bytes", "-1"}}
	case c == Pids:
		ws = []w{{"pids.max", "max"}}
	case c == CPU && v2:
		ws = []w{{"cpu.max", "max"}}
	case c == CPU:
		ws = []w{{"cpu.cfs_quota_us", "-1"}}
	}
	for _, x := range ws {
		p := filepath.Join(dir, x.file)
		if x.file == "memory.memsw.limit_in_bytes" && !exists(p) {
			continue
		}
		if err := writeFile(p, x.v); err != nil {
			return fmt.Errorf("cannot lift the %s limit: %w", c, err)
		}
	}
	return nil
}

// Close kills whatever still runs in the group and removes its cgroups.
func (g *Group) Close() error {
	g.m.mu.Lock()
	if g.m.groups[g.name] == g {
		delete(g.m.groups, g.name)
	}
	g.m.mu.Unlock()
	g.mu.Lock()
	g.closed = true
	seen := map[string]bool{}
	var dirs []string
	for _, d := range g.dirs {
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	if g.acct != "" {
		dirs = append(dirs, g.acct)
	}
	g.dirs = map[Controller]string{}
	g.mu.Unlock()
	var first error
	for _, d := range dirs {
		if err := removeTree(d); err != nil && first == nil {
			first = err
		}
	}
	g.m.removeTop()
	return first
}

// Command is the cgroup of one command.
type Command struct {
	m     *Manager
	g     *Group
	dirs  []string // the command's directories (one under version 2)
	acct  string   // version 1 cpuacct directory, or ""
	cpu   string   // the directory with the cpu controller's files, or ""
	fd    *os.File // version 2: the directory, for CgroupFD
	limit Limits

	groupPidsMax int64 // the group's pids.events "max" when the command started
	closeOnce    sync.Once
}

// NewCommand makes the cgroup of a command with limits l, inside g (nil:
// no group). The caller places the command's process in it before it
// runs, and Closes it once the command has ended.
func (m *Manager) NewCommand(g *Group, l Limits) (*Command, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	cs := l.controllers()
	if g != nil {
		cs = union(cs, g.Limits().controllers())
	}
	if len(cs) == 0 {
		return &Command{m: m, g: g}, nil
	}
	if err := m.prepare(cs); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("cmd-%d-%s-%d", m.pid, m.tag, m.seq.Add(1))
	var parents []string
	if g != nil {
		if err := g.ensure(cs); err != nil {
			return nil, err
		}
		g.mu.Lock()
		if m.v2 {
			parents = []string{g.dirs[cs[0]]}
		} else {
			for _, c := range cs {
				parents = append(parents, g.dirs[c])
			}
		}
		g.mu.Unlock()
	} else {
		parents = m.topDirs(cs)
	}
	dirs, err := m.makeDirs(parents, name, cs)
	if err != nil {
		m.removeTop()
		return nil, unavailable("cannot create a cgroup: %v", err)
	}
	c := &Command{m: m, g: g, dirs: dirs, limit: l}
	// writeLimits wants one directory per controller of l, in its order.
	var ldirs []string
	for i, ctl := range cs {
		if m.v2 {
			ldirs = dirs
			break
		}
		for _, lc := range l.controllers() {
			if lc == ctl {
				ldirs = append(ldirs, dirs[i])
			}
		}
		if ctl == CPU {
			c.cpu = dirs[i]
		}
	}
	if m.v2 && contains(controllerNames(cs), "cpu") {
		c.cpu = dirs[0]
	}
	if err := writeLimits(m.v2, ldirs, l); err != nil {
		c.Close()
		return nil, unavailable("%v", err)
	}
	if !m.v2 && c.cpu != "" && m.acct != "" && m.acct != m.own[CPU] {
		parent := filepath.Join(m.acct, Top)
		if g != nil {
			parent = filepath.Join(parent, g.name)
			g.mu.Lock()
			g.acct = parent
			g.mu.Unlock()
		}
		if err := os.MkdirAll(parent, 0o755); err == nil && os.Mkdir(filepath.Join(parent, name), 0o755) == nil {
			c.acct = filepath.Join(parent, name)
		}
	}
	if m.v2 {
		f, err := os.OpenFile(dirs[0], os.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			c.Close()
			return nil, unavailable("cannot open the cgroup: %v", err)
		}
		c.fd = f
	}
	if g != nil {
		c.groupPidsMax = g.pidsEvents()
	}
	return c, nil
}

// CgroupFD is, under version 2, the descriptor of the command's cgroup
// directory, for the clone that starts the command in it
// (SysProcAttr.UseCgroupFD); ok is false under version 1.
func (c *Command) CgroupFD() (fd int, ok bool) {
	if c == nil || c.fd == nil {
		return -1, false
	}
	return int(c.fd.Fd()), true
}

// Dirs are the command's cgroup directories (one per hierarchy).
func (c *Command) Dirs() []string { return append([]string(nil), c.dirs...) }

// Place moves process pid into the command's cgroups (version 1; under
// version 2 the process starts there).
func (c *Command) Place(pid int) error {
	if c.fd != nil {
		return nil
	}
	s := strconv.Itoa(pid)
	for _, d := range append(append([]string(nil), c.dirs...), c.acct) {
		if d == "" {
			continue
		}
		if err := writeFile(filepath.Join(d, "cgroup.procs"), s); err != nil {
			return fmt.Errorf("cannot place the command in its cgroup: %w", err)
		}
	}
	return nil
}

// Hit names the limit the command ran into ("" for none): memory when
// the kernel killed one of its processes for lack of memory, processes
// when one of its forks failed at a process limit (its own or its
// group's: recent kernels count the refusal where the fork was made).
func (c *Command) Hit() string {
	for _, d := range c.dirs {
		if c.m.v2 {
			if b, err := os.ReadFile(filepath.Join(d, "memory.events")); err == nil && parseKeyed(b, "oom_kill") > 0 {
				return HitMemory
			}
		} else if b, err := os.ReadFile(filepath.Join(d, "memory.oom_control")); err == nil && parseKeyed(b, "oom_kill") > 0 {
			return HitMemory
		}
	}
	if c.ownPidsMax() > 0 {
		return HitProcesses
	}
	return ""
}

// GroupHit reports whether the command's group refused a fork at its
// process limit since the command started: older kernels count it only
// there, and cannot say for which command.
func (c *Command) GroupHit() bool {
	return c.g != nil && c.g.pidsEvents() > c.groupPidsMax
}

// ownPidsMax is the command's own count of forks refused by a process
// limit.
func (c *Command) ownPidsMax() int64 {
	for _, d := range c.dirs {
		if c.m.v2 {
			if b, err := os.ReadFile(filepath.Join(d, "pids.events.local")); err == nil {
				return parseKeyed(b, "max")
			}
		}
		if b, err := os.ReadFile(filepath.Join(d, "pids.events")); err == nil {
			return parseKeyed(b, "max")
		}
	}
	return 0
}

// pidsEvents is the group's pids.events "max" count.
func (g *Group) pidsEvents() int64 {
	g.mu.Lock()
	d := g.dirs[Pids]
	g.mu.Unlock()
	if d == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(d, "pids.events"))
	if err != nil {
		return 0
	}
	return parseKeyed(b, "max")
}

// CPUStat is what the command's cgroup says of its CPU use.
type CPUStat struct {
	Usage         time.Duration // CPU time consumed
	Throttled     int64         // periods in which the quota ran out
	ThrottledTime time.Duration // time spent throttled
}

// CPU reads the command's CPU statistics (zero where there are none).
func (c *Command) CPU() CPUStat {
	var s CPUStat
	if c.cpu == "" {
		return s
	}
	b, _ := os.ReadFile(filepath.Join(c.cpu, "cpu.stat"))
	s.Throttled = parseKeyed(b, "nr_throttled")
	if c.m.v2 {
		s.Usage = time.Duration(parseKeyed(b, "usage_usec")) * time.Microsecond
		s.ThrottledTime = time.Duration(parseKeyed(b, "throttled_usec")) * time.Microsecond
		return s
	}
	s.ThrottledTime = time.Duration(parseKeyed(b, "throttled_time"))
	acct := c.acct
	if acct == "" {
		acct = c.cpu
	}
	if u, err := os.ReadFile(filepath.Join(acct, "cpuacct.usage")); err == nil {
		n, _ := strconv.ParseInt(strings.TrimSpace(string(u)), 10, 64)
		s.Usage = time.Duration(n)
	}
	return s
}

// Kill kills every process in the command's cgroups.
func (c *Command) Kill() {
	for _, d := range c.dirs {
		killAll(d, c.m.v2)
	}
}

// Close kills what is left of the command and removes its cgroups.
func (c *Command) Close() error {
	var err error
	c.closeOnce.Do(func() {
		if c.fd != nil {
			c.fd.Close()
		}
		for _, d := range append(append([]string(nil), c.dirs...), c.acct) {
			if d == "" {
				continue
			}
			if e := removeTree(d); e != nil && err == nil {
				err = e
			}
		}
		if c.g == nil {
			c.m.removeTop()
		}
	})
	return err
}

// killAll kills the processes of dir (and its children) until none is
// left: cgroup.kill where the kernel has it, else each process of
// cgroup.procs, again while a fork races the kill.
func killAll(dir string, v2 bool) {
	if v2 && exists(filepath.Join(dir, "cgroup.kill")) {
		if writeFile(filepath.Join(dir, "cgroup.kill"), "1") == nil {
			return
		}
	}
	for i := 0; i < 100; i++ {
		pids := procsOf(dir)
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(time.Millisecond)
	}
}

// procsOf lists the processes of dir and of every cgroup below it.
func procsOf(dir string) []int {
	var out []int
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil && n > 0 {
				out = append(out, n)
			}
		}
		return nil
	})
	return out
}

// removeTree kills what runs in the cgroup dir and removes it with its
// children, waiting a moment for the kernel to let go of exited processes.
func removeTree(dir string) error {
	var subs []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			subs = append(subs, p)
		}
		return nil
	})
	var err error
	for i := len(subs) - 1; i >= 0; i-- {
		if e := rmdirCgroup(subs[i]); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// rmdirCgroup removes one cgroup directory, killing its processes; a
// directory of a fake cgroupfs (regular files inside) is removed whole.
func rmdirCgroup(d string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Rmdir(d)
		switch {
		case err == nil || err == syscall.ENOENT:
			return nil
		case err == syscall.ENOTEMPTY:
			if !isCgroupfs(d) {
				return os.RemoveAll(d)
			}
		case err != syscall.EBUSY:
			return fmt.Errorf("cannot remove cgroup %s: %w", filepath.Base(d), err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cannot remove cgroup %s: %w", filepath.Base(d), err)
		}
		killAll(d, exists(filepath.Join(d, "cgroup.controllers")))
		time.Sleep(5 * time.Millisecond)
	}
}

// isCgroupfs reports whether d lies on a cgroup file system.
func isCgroupfs(d string) bool {
	var st syscall.Statfs_t
	if syscall.Statfs(d, &st) != nil {
		return false
	}
	const cgroupMagic, cgroup2Magic = 0x27e0eb, 0x63677270
	return st.Type == cgroupMagic || st.Type == cgroup2Magic
}

func writeFile(p, v string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func removeDirs(dirs []string) {
	for i := len(dirs) - 1; i >= 0; i-- {
		removeTree(dirs[i])
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func union(a, b []Controller) []Controller {
	set := map[Controller]bool{}
	for _, c := range append(append([]Controller(nil), a...), b...) {
		set[c] = true
	}
	var out []Controller
	for _, c := range allControllers {
		if set[c] {
			out = append(out, c)
		}
	}
	return out
}

func controllerNames(cs []Controller) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

// Scrub returns err's text with this process's cgroup directories
// replaced by "<cgroup>": what a command's caller (a tenant) may be told,
// without the host's layout.
func (m *Manager) Scrub(err error) string {
	msg := err.Error()
	dirs := []string{m.acct}
	for _, d := range m.own {
		dirs = append(dirs, d)
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		if d != "" && d != "/" {
			msg = strings.ReplaceAll(msg, d, "<cgroup>")
		}
	}
	return msg
}

// newTag is a short random name part.
func newTag() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
