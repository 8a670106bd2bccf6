package agentbe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/cgroup"
	"github.com/agentbe/agent-backend/internal/testenv"
)

// requireCgroups skips (fails under CI) unless this host can enforce
// memory, process and CPU limits.
func requireCgroups(t testing.TB) *cgroup.Manager {
	t.Helper()
	m, err := hostCgroups()
	ok := err == nil && m.Check(cgroup.Limits{MemoryBytes: 64 << 20, Pids: 64, CPU: 1}) == nil
	testenv.Require(t, ok, fmt.Sprintf("writable cgroups with the memory, pids and cpu controllers (%v)", err))
	return m
}

// limitedLocal is a bwrap Local with limits whose commands' cgroups are
// recorded (seen) and checked to be gone once each command has ended.
func limitedLocal(t *testing.T, lim ResourceLimits, network Network) (*Local, *cgroupLog) {
	t.Helper()
	requireBwrap(t)
	requireCgroups(t)
	l, err := NewLocal(LocalConfig{RootDir: t.TempDir(), Isolation: IsolationBwrap, Limits: lim, Network: network,
		AllowDangerous: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Destroy(context.Background()) })
	log := &cgroupLog{}
	l.cgroupDone = log.add
	t.Cleanup(func() { log.checkGone(t) })
	return l, log
}

// cgroupLog records the cgroups of commands (Local.cgroupDone).
type cgroupLog struct {
	mu   sync.Mutex
	dirs []string
	cpu  []cgroup.CPUStat
}

func (c *cgroupLog) add(cg *cgroup.Command) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dirs = append(c.dirs, cg.Dirs()...)
	c.cpu = append(c.cpu, cg.CPU())
}

// checkGone fails if a recorded cgroup still exists.
func (c *cgroupLog) checkGone(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s left behind (%v)", d, err)
		}
	}
}

// wantLimit checks err is LIMIT_EXCEEDED naming limit.
func wantLimit(t *testing.T, err error, limit string) {
	t.Helper()
	var le *LimitError
	if CodeOf(err) != CodeLimitExceeded || !errors.Is(err, ErrLimitExceeded) || !errors.As(err, &le) || le.Limit != limit {
		t.Fatalf("err = %v (code %q), want LIMIT_EXCEEDED for %s", err, CodeOf(err), limit)
	}
	if !strings.Contains(err.Error(), "LIMIT_EXCEEDED: "+limit+" limit exceeded") {
		t.Fatalf("message %q does not name the %s limit", err, limit)
	}
}

func TestLimitMemoryStopsAllocation(t *testing.T) {
	l, log := limitedLocal(t, ResourceLimits{MemoryBytes: 64 << 20}, "")
	// tail keeps a line without newline whole: 1 GiB of zeros.
	_, err := l.Exec(context.Background(), "head -c 1G /dev/zero | tail", ExecOptions{})
	wantLimit(t, err, LimitMemory)
	if !strings.Contains(err.Error(), "64 MiB per command") {
		t.Errorf("message %q does not give the limit", err)
	}
	// The backend still works: the limit stopped the command, not us.
	if out := isoExec(t, l, "echo alive", ExecOptions{}); out != "alive\n" {
		t.Fatalf("after the limit: %q", out)
	}
	if len(log.dirs) == 0 {
		t.Fatal("no cgroup was made")
	}
}

func TestLimitPidsStopsForkLoop(t *testing.T) {
	l, _ := limitedLocal(t, ResourceLimits{Pids: 16, Timeout: time.Minute}, "")
	_, err := l.Exec(context.Background(), "for i in $(seq 200); do sleep 60 & done; wait", ExecOptions{})
	wantLimit(t, err, LimitProcesses)
}

func TestLimitCPUThrottlesBusyLoop(t *testing.T) {
	// A quota small enough that even a loaded machine gives the loop more
	// in some period.
	l, log := limitedLocal(t, ResourceLimits{CPU: 0.05, Timeout: 1500 * time.Millisecond}, "")
	start := time.Now()
	_, err := l.Exec(context.Background(), "while :; do :; done", ExecOptions{})
	elapsed := time.Since(start)
	wantLimit(t, err, LimitTime)
	if !strings.Contains(err.Error(), "throttled by its cpu limit (0.05 cores per command)") {
		t.Errorf("message %q does not name the cpu limit", err)
	}
	if len(log.cpu) != 1 {
		t.Fatalf("cpu stats of %d commands", len(log.cpu))
	}
	st := log.cpu[0]
	if st.Throttled == 0 || st.Usage == 0 {
		t.Fatalf("cpu stat %+v: the quota never throttled the loop", st)
	}
	// The kernel grants 0.05 of a core per period (with some overrun at
	// the period's edges): far below the whole core an unthrottled loop
	// takes.
	if limit := time.Duration(0.25 * float64(elapsed)); st.Usage > limit {
		t.Fatalf("the loop used %v of CPU in %v: more than 0.25 cores, for a quota of 0.05", st.Usage, elapsed)
	}
	t.Logf("busy loop under 0.05 cores: %v of CPU in %v, throttled %d times for %v", st.Usage, elapsed, st.Throttled, st.ThrottledTime)
}

func TestLimitTimeoutStopsSleep(t *testing.T) {
	requireBwrap(t)
	l, err := NewLocal(LocalConfig{RootDir: t.TempDir(), Isolation: IsolationBwrap,
		Limits: ResourceLimits{Timeout: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Destroy(context.Background())
	_, err = l.Exec(context.Background(), "sleep 30", ExecOptions{})
	wantLimit(t, err, LimitTime)
	if !strings.Contains(err.Error(), "300ms per command") {
		t.Errorf("message %q does not give the limit", err)
	}
	// The caller's own shorter timeout stays the caller's: EXEC_FAILED.
	_, err = l.Exec(context.Background(), "sleep 30", ExecOptions{Timeout: 50 * time.Millisecond})
	if CodeOf(err) != CodeExecFailed || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("caller's timeout: %v", err)
	}
}

// TestLimitPlacedBeforeFirstInstruction: bwrap unshares the cgroup
// namespace while it sets the sandbox up, so the command sees its cgroup
// as the namespace's root only if bwrap was in it before that.
func TestLimitPlacedBeforeFirstInstruction(t *testing.T) {
	l, log := limitedLocal(t, ResourceLimits{MemoryBytes: 256 << 20, Pids: 64}, "")
	out := isoExec(t, l, "cat /proc/self/cgroup", ExecOptions{})
	for _, c := range []string{"memory", "pids"} {
		if !strings.Contains(out, ":"+c+":/\n") {
			t.Errorf("the %s line of /proc/self/cgroup in the sandbox is not the namespace root:\n%s", c, out)
		}
	}
	if m, _ := hostCgroups(); m.Version() == 1 {
		for _, d := range log.dirs {
			if !strings.Contains(d, "/"+cgroup.Top+"/cmd-") {
				t.Errorf("command cgroup %s not below %s", d, cgroup.Top)
			}
		}
	}
}

func TestLimitPlainModeGate(t *testing.T) {
	requireCgroups(t)
	l, err := NewLocal(LocalConfig{RootDir: t.TempDir(), Isolation: IsolationNone, AllowDangerous: true,
		Limits: ResourceLimits{Pids: 32}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Destroy(context.Background())
	log := &cgroupLog{}
	l.cgroupDone = log.add
	// $$ is the process the gate held: the shell the command runs in.
	out := isoExec(t, l, `echo "$0"; cat /proc/$$/cgroup`, ExecOptions{})
	if !strings.HasPrefix(out, l.shell+"\n") {
		t.Errorf("$0 = %q, want the shell", strings.SplitN(out, "\n", 2)[0])
	}
	if !strings.Contains(out, "pids:/") || !strings.Contains(out, "/"+cgroup.Top+"/cmd-") {
		t.Fatalf("the shell is not in its cgroup:\n%s", out)
	}
	log.checkGone(t)
	_, err = l.Exec(context.Background(), "for i in $(seq 100); do sleep 60 & done; wait", ExecOptions{})
	wantLimit(t, err, LimitProcesses)
	log.checkGone(t)
}

func TestResourceGroupBoundsSum(t *testing.T) {
	l, log := limitedLocal(t, ResourceLimits{}, "")
	name := fmt.Sprintf("t-sum-%d", os.Getpid())
	g, err := l.NewResourceGroup(name, ResourceLimits{MemoryBytes: 160 << 20})
	if err != nil {
		t.Fatal(err)
	}
	a, err := l.Scope("a", ScopeOptions{Group: g})
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Scope("b", ScopeOptions{Group: g})
	if err != nil {
		t.Fatal(err)
	}
	// Each holds 100 MiB for a while (perl is part of every Debian).
	const hold = `perl -e 'vec($x, (100<<20)-1, 8) = 1; sleep %s; print length $x'`
	if out := isoExec(t, a, fmt.Sprintf(hold, "0"), ExecOptions{}); strings.TrimSpace(out) != "104857600" {
		t.Fatalf("alone: %q", out)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []*Scope{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Exec(context.Background(), fmt.Sprintf(hold, "3"), ExecOptions{})
		}()
	}
	wg.Wait()
	var limited int
	for _, err := range errs {
		if err != nil {
			wantLimit(t, err, LimitMemory)
			if !strings.Contains(err.Error(), "160 MiB for group \""+name+"\"") {
				t.Errorf("message %q does not name the group's limit", err)
			}
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("two commands of 100 MiB each ran together in a group of 160 MiB")
	}
	var groupDirs []string
	for _, d := range log.dirs {
		groupDirs = append(groupDirs, filepath.Dir(d))
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range groupDirs {
		if filepath.Base(d) != name {
			t.Fatalf("command cgroup not in the group's: %s", d)
		}
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("group cgroup %s left behind", d)
		}
	}
	if _, err := a.Exec(context.Background(), "true", ExecOptions{}); CodeOf(err) != CodeExecError {
		t.Fatalf("exec in a closed group: %v", err)
	}
	if _, err := l.Scope("c", ScopeOptions{Group: g}); CodeOf(err) != CodeInvalidConfiguration {
		t.Fatalf("scope with a closed group: %v", err)
	}
}

func TestResourceGroupCloseKillsCommands(t *testing.T) {
	l, _ := limitedLocal(t, ResourceLimits{}, "")
	g, err := l.NewResourceGroup(fmt.Sprintf("t-close-%d", os.Getpid()), ResourceLimits{Pids: 32})
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Scope("s", ScopeOptions{Group: g})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Exec(context.Background(), "echo started; sleep 60", ExecOptions{Stdout: &syncWriter{ch: make(chan struct{})}})
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	g.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the command outlived its group")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not stop the group's command")
	}
}

// syncWriter discards what it gets.
type syncWriter struct{ ch chan struct{} }

func (w *syncWriter) Write(p []byte) (int, error) { return len(p), nil }

func TestScopeLimitsOverride(t *testing.T) {
	l, _ := limitedLocal(t, ResourceLimits{MemoryBytes: 512 << 20, Timeout: time.Minute}, "")
	s, err := l.Scope("s", ScopeOptions{Limits: ResourceLimits{MemoryBytes: 32 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	const alloc = `perl -e 'vec($x, (100<<20)-1, 8) = 1; print length $x'`
	_, err = s.Exec(context.Background(), alloc, ExecOptions{})
	wantLimit(t, err, LimitMemory)
	// The parent keeps its own, larger limit.
	if out := isoExec(t, l, alloc, ExecOptions{}); strings.TrimSpace(out) != "104857600" {
		t.Fatalf("parent: %q", out)
	}
}

func TestNetworkNone(t *testing.T) {
	requireBwrap(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	probe := fmt.Sprintf(`if (exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null; then echo reached; else echo unreachable; fi`, port)
	host, err := NewLocal(LocalConfig{RootDir: t.TempDir(), Isolation: IsolationBwrap, Shell: ShellBash, AllowDangerous: true})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Destroy(context.Background())
	if out := isoExec(t, host, probe, ExecOptions{}); out != "reached\n" {
		t.Fatalf("network host: %q", out)
	}
	<-accepted
	none, err := NewLocal(LocalConfig{RootDir: t.TempDir(), Isolation: IsolationBwrap, Shell: ShellBash,
		AllowDangerous: true, Network: NetworkNone})
	if err != nil {
		t.Fatal(err)
	}
	defer none.Destroy(context.Background())
	if out := isoExec(t, none, probe, ExecOptions{}); out != "unreachable\n" {
		t.Fatalf("network none: %q", out)
	}
	// A scope of the host backend can turn it off, and one of the none
	// backend on again.
	s, err := host.Scope("s", ScopeOptions{Network: NetworkNone})
	if err != nil {
		t.Fatal(err)
	}
	if out := isoExec(t, s, probe, ExecOptions{}); out != "unreachable\n" {
		t.Fatalf("scope with network none: %q", out)
	}
	s2, err := none.Scope("s", ScopeOptions{Network: NetworkHost})
	if err != nil {
		t.Fatal(err)
	}
	if out := isoExec(t, s2, probe, ExecOptions{}); out != "reached\n" {
		t.Fatalf("scope with network host: %q", out)
	}
	select {
	case <-accepted:
	default:
		t.Fatal("the listener saw no connection from the host-network scope")
	}
	select {
	case <-accepted:
		t.Fatal("a command without network reached the listener")
	default:
	}
}

func TestLimitsConfigErrors(t *testing.T) {
	root := t.TempDir()
	cases := []struct {
		name string
		cfg  LocalConfig
	}{
		{"network none without bwrap", LocalConfig{Isolation: IsolationSoftware, Network: NetworkNone}},
		{"unknown network", LocalConfig{Isolation: IsolationNone, Network: "bridge"}},
		{"negative memory", LocalConfig{Isolation: IsolationNone, Limits: ResourceLimits{MemoryBytes: -1}}},
		{"negative timeout", LocalConfig{Isolation: IsolationNone, Limits: ResourceLimits{Timeout: -time.Second}}},
		{"tiny cpu", LocalConfig{Isolation: IsolationNone, Limits: ResourceLimits{CPU: 0.001}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.RootDir = root
			if _, err := NewLocal(c.cfg); CodeOf(err) != CodeInvalidConfiguration {
				t.Fatalf("NewLocal: %v, want INVALID_CONFIGURATION", err)
			}
		})
	}
	l, err := NewLocal(LocalConfig{RootDir: root, Isolation: IsolationNone})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Destroy(context.Background())
	if _, err := l.Scope("x", ScopeOptions{Network: NetworkNone}); CodeOf(err) != CodeInvalidConfiguration {
		t.Fatalf("scope with network none without bwrap: %v", err)
	}
	m, _ := NewMemory(MemoryConfig{})
	if _, err := m.Scope("x", ScopeOptions{Limits: ResourceLimits{Pids: 1}}); CodeOf(err) != CodeNotImplemented {
		t.Fatalf("limits on a memory scope: %v", err)
	}
}

// TestLimitsUnenforceable: limits this host cannot enforce are an error
// at construction, never ignored.
func TestLimitsUnenforceable(t *testing.T) {
	old := hostCgroups
	t.Cleanup(func() { hostCgroups = old })
	cases := []struct {
		name string
		m    func() (*cgroup.Manager, error)
		want string
	}{
		{"no cgroupfs", func() (*cgroup.Manager, error) {
			return nil, fmt.Errorf("%w: no cgroup file system", cgroup.ErrUnavailable)
		}, "no cgroup file system"},
		{"controller missing", func() (*cgroup.Manager, error) {
			return cgroup.NewV1(map[cgroup.Controller]string{cgroup.Pids: t.TempDir()}), nil
		}, "memory controller (cgroup v1) is not mounted"},
		{"not writable", func() (*cgroup.Manager, error) {
			return cgroup.NewV1(map[cgroup.Controller]string{cgroup.Memory: "/proc/agentbe-nonexistent"}), nil
		}, "cannot"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hostCgroups = c.m
			_, err := NewLocal(LocalConfig{RootDir: t.TempDir(), Isolation: IsolationNone,
				Limits: ResourceLimits{MemoryBytes: 1 << 30}})
			if CodeOf(err) != CodeInvalidConfiguration || !errors.Is(err, cgroup.ErrUnavailable) ||
				!strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewLocal: %v, want INVALID_CONFIGURATION saying %q", err, c.want)
			}
			l, err := NewLocal(LocalConfig{RootDir: t.TempDir(), Isolation: IsolationNone})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Destroy(context.Background())
			if _, err := l.NewResourceGroup("g", ResourceLimits{MemoryBytes: 1 << 30}); CodeOf(err) != CodeInvalidConfiguration {
				t.Fatalf("NewResourceGroup: %v", err)
			}
			// A timeout needs no cgroup.
			if _, err := l.NewResourceGroup("g", ResourceLimits{Timeout: time.Second}); err != nil {
				t.Fatalf("group with a timeout only: %v", err)
			}
		})
	}
}

func TestResourceGroupSetLimits(t *testing.T) {
	l, _ := limitedLocal(t, ResourceLimits{}, "")
	g, err := l.NewResourceGroup(fmt.Sprintf("t-set-%d", os.Getpid()), ResourceLimits{MemoryBytes: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s, err := l.Scope("s", ScopeOptions{Group: g})
	if err != nil {
		t.Fatal(err)
	}
	const alloc = `perl -e 'vec($x, (100<<20)-1, 8) = 1; print length $x'`
	_, err = s.Exec(context.Background(), alloc, ExecOptions{})
	wantLimit(t, err, LimitMemory)
	for _, lim := range []ResourceLimits{{MemoryBytes: 256 << 20, Pids: 32}, {}} {
		if err := g.SetLimits(lim); err != nil {
			t.Fatal(err)
		}
		if out := isoExec(t, s, alloc, ExecOptions{}); out != "104857600" {
			t.Fatalf("with %+v: %q", lim, out)
		}
	}
	if err := g.SetLimits(ResourceLimits{Pids: -1}); CodeOf(err) != CodeInvalidConfiguration {
		t.Fatalf("negative: %v", err)
	}
	if err := g.SetLimits(ResourceLimits{Timeout: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Exec(context.Background(), "sleep 10", ExecOptions{})
	wantLimit(t, err, LimitTime)
}

// TestLimitsCgroupFailureHidesHostPaths: a cgroup that cannot be made when
// a command starts fails it with EXEC_ERROR, without the host's cgroup
// paths in the message.
func TestLimitsCgroupFailureHidesHostPaths(t *testing.T) {
	l, err := NewLocal(LocalConfig{RootDir: t.TempDir(), Isolation: IsolationNone, AllowDangerous: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Destroy(context.Background())
	gone := filepath.Join(t.TempDir(), "host-cgroup-layout")
	old := hostCgroups
	t.Cleanup(func() { hostCgroups = old })
	hostCgroups = func() (*cgroup.Manager, error) {
		return cgroup.NewV1(map[cgroup.Controller]string{cgroup.Pids: gone}), nil
	}
	l.limits = ResourceLimits{Pids: 8} // as if checked before the hierarchy went away
	_, err = l.Exec(context.Background(), "true", ExecOptions{})
	if CodeOf(err) != CodeExecError || !strings.Contains(err.Error(), "cannot confine command") ||
		strings.Contains(err.Error(), gone) || !strings.Contains(err.Error(), "<cgroup>") {
		t.Fatalf("err = %v", err)
	}
}
