//go:build linux

package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// This machine's layout (cgroup v1, cpu and cpuacct apart, a hybrid
// unified mount without controllers).
const v1Mountinfo = `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

const v1ProcCgroup = `9:name=systemd:/
8:pids:/
4:memory:/process_api/ce1b
2:cpuacct:/
1:cpu:/
0::/
`

func TestDetect(t *testing.T) {
	cases := []struct {
		name       string
		mi, cg     string
		v2         bool
		own        map[Controller]string
		acct       string
		ownIsRoot  bool
		wantErrSub string
	}{
		{name: "v1 here", mi: v1Mountinfo, cg: v1ProcCgroup, own: map[Controller]string{
			Memory: "/sys/fs/cgroup/memory/process_api/ce1b", Pids: "/sys/fs/cgroup/pids", CPU: "/sys/fs/cgroup/cpu"},
			acct: "/sys/fs/cgroup/cpuacct"},
		{name: "v1 cpu,cpuacct together, container mount root",
			mi: "25 24 0:22 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n" +
				"26 24 0:23 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
			cg:   "3:cpu,cpuacct:/docker/abc\n2:memory:/docker/abc/sub\n",
			own:  map[Controller]string{CPU: "/sys/fs/cgroup/cpu,cpuacct", Memory: "/sys/fs/cgroup/memory/sub"},
			acct: "/sys/fs/cgroup/cpu,cpuacct"},
		{name: "v2 systemd", mi: "35 24 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n",
			cg: "0::/system.slice/agentbe.service\n", v2: true, own: map[Controller]string{
				Memory: "/sys/fs/cgroup/system.slice/agentbe.service", Pids: "/sys/fs/cgroup/system.slice/agentbe.service",
				CPU: "/sys/fs/cgroup/system.slice/agentbe.service"}},
		{name: "v2 namespace root", mi: "35 24 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			cg: "0::/\n", v2: true, ownIsRoot: true, own: map[Controller]string{
				Memory: "/sys/fs/cgroup", Pids: "/sys/fs/cgroup", CPU: "/sys/fs/cgroup"}},
		{name: "escaped mount point", mi: `26 24 0:23 / /sys/fs/cg\040x rw - cgroup cgroup rw,pids` + "\n",
			cg: "2:pids:/a\n", own: map[Controller]string{Pids: "/sys/fs/cg x/a"}},
		{name: "none", mi: "30 22 0:27 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n", cg: "0::/\n",
			wantErrSub: "no cgroup file system"},
		{name: "outside the mount", mi: "26 24 0:23 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n",
			cg: "2:pids:/other\n", wantErrSub: "no cgroup file system"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := detect([]byte(c.mi), []byte(c.cg), 7)
			if c.wantErrSub != "" {
				if err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), c.wantErrSub) {
					t.Fatalf("err = %v, want %q", err, c.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.v2 != c.v2 || !reflect.DeepEqual(m.own, c.own) || m.acct != c.acct || m.ownIsRoot != c.ownIsRoot {
				t.Fatalf("got v2=%v own=%v acct=%q root=%v", m.v2, m.own, m.acct, m.ownIsRoot)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(v1Mountinfo), []byte(v1ProcCgroup))
	f.Add([]byte(`1 2 3 \0 \1 - cgroup x rw,pids`), []byte("::\n0::"))
	f.Fuzz(func(t *testing.T, mi, cg []byte) {
		detect(mi, cg, 1)
		unescapeMount(string(mi))
	})
}

func TestLimitsValidate(t *testing.T) {
	for _, l := range []Limits{{MemoryBytes: -1}, {Pids: -1}, {CPU: -1}, {CPU: 0.001}, {CPU: 1 << 21}} {
		if l.Validate() == nil {
			t.Errorf("%+v accepted", l)
		}
	}
	for _, n := range []string{"", ".x", "-x", "cmd-1", "a/b", "a b", strings.Repeat("a", 65), ".."} {
		if validName(n) {
			t.Errorf("group name %q accepted", n)
		}
	}
	if !validName("alice_1.x-Y") {
		t.Error("good name refused")
	}
}

// fakeV2 makes a unified hierarchy in a temporary directory: own holds
// this (fake) process and offers the given controllers.
func fakeV2(t *testing.T, controllers string) (*Manager, string) {
	t.Helper()
	own := filepath.Join(t.TempDir(), "service")
	if err := os.Mkdir(own, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"cgroup.controllers": controllers, "cgroup.subtree_control": "",
		"cgroup.procs": "4242\n"} {
		if err := os.WriteFile(filepath.Join(own, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return NewV2(own, false, 4242), own
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestV2Files(t *testing.T) {
	m, own := fakeV2(t, "cpuset cpu io memory pids")
	g, err := m.NewGroup("alice", Limits{MemoryBytes: 256 << 20, Pids: 64, CPU: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	gdir := filepath.Join(own, Top, "alice")
	want := map[string]string{
		// The process moved itself into its leaf first.
		filepath.Join(own, selfLeaf, "cgroup.procs"):      "4242",
		filepath.Join(own, "cgroup.subtree_control"):      "+memory +pids +cpu",
		filepath.Join(own, Top, "cgroup.subtree_control"): "+memory +pids +cpu",
		filepath.Join(gdir, "memory.max"):                 "268435456",
		filepath.Join(gdir, "memory.swap.max"):            "0",
		filepath.Join(gdir, "memory.oom.group"):           "1",
		filepath.Join(gdir, "pids.max"):                   "64",
		filepath.Join(gdir, "cpu.max"):                    "150000 100000",
	}
	c, err := m.NewCommand(g, Limits{MemoryBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	cdir := filepath.Join(gdir, "cmd-4242-"+m.tag+"-1")
	want[filepath.Join(gdir, "cgroup.subtree_control")] = "+memory +pids +cpu"
	want[filepath.Join(cdir, "memory.max")] = "67108864"
	for p, v := range want {
		if got := readFile(t, p); got != v {
			t.Errorf("%s = %q, want %q", strings.TrimPrefix(p, own), got, v)
		}
	}
	if _, err := os.Stat(filepath.Join(cdir, "pids.max")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the command got a pids limit it did not ask for")
	}
	if got := c.Dirs(); !reflect.DeepEqual(got, []string{cdir}) {
		t.Fatalf("Dirs = %v", got)
	}
	// Placement is by descriptor: the clone creates the process in it.
	fd, ok := c.CgroupFD()
	if !ok {
		t.Fatal("no cgroup descriptor under v2")
	}
	if link, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); link != cdir {
		t.Fatalf("descriptor names %q, want %q", link, cdir)
	}
	if err := c.Place(1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cdir, "cgroup.procs")); !errors.Is(err, os.ErrNotExist) {
		t.Error("Place wrote a pid under v2")
	}
	// Counters.
	if c.Hit() != "" {
		t.Fatal("hit before any event")
	}
	os.WriteFile(filepath.Join(cdir, "pids.events.local"), []byte("max 2\n"), 0o644)
	if h := c.Hit(); h != HitProcesses {
		t.Fatalf("Hit = %q, want processes", h)
	}
	os.WriteFile(filepath.Join(cdir, "memory.events"), []byte("low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\n"), 0o644)
	if h := c.Hit(); h != HitMemory {
		t.Fatalf("Hit = %q, want memory", h)
	}
	os.WriteFile(filepath.Join(gdir, "pids.events"), []byte("max 3\n"), 0o644)
	if !c.GroupHit() {
		t.Fatal("the group's refused forks are not seen")
	}
	c2, err := m.NewCommand(g, Limits{CPU: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	c2dir := filepath.Join(gdir, "cmd-4242-"+m.tag+"-2")
	if got := readFile(t, filepath.Join(c2dir, "cpu.max")); got != "50000 100000" {
		t.Fatalf("cpu.max = %q", got)
	}
	os.WriteFile(filepath.Join(c2dir, "cpu.stat"), []byte("usage_usec 1500\nuser_usec 1000\nnr_periods 9\nnr_throttled 3\nthrottled_usec 700\n"), 0o644)
	if st := c2.CPU(); st != (CPUStat{Usage: 1500 * time.Microsecond, Throttled: 3, ThrottledTime: 700 * time.Microsecond}) {
		t.Fatalf("CPU = %+v", st)
	}
	if c2.GroupHit() {
		t.Fatal("a refusal before the command started counted for it")
	}
	// Cleanup.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cdir); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("command cgroup left")
	}
	if _, err := m.NewGroup("alice", Limits{Pids: 1}); err == nil {
		t.Fatal("a second group of the same name")
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(gdir); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("group cgroup left")
	}
	// Ungrouped commands sit directly below Top.
	c3, err := m.NewCommand(nil, Limits{Pids: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(own, Top, "cmd-4242-"+m.tag+"-3", "pids.max")); got != "5" {
		t.Fatalf("pids.max = %q", got)
	}
	c3.Close()
}

func TestV2Unavailable(t *testing.T) {
	m, own := fakeV2(t, "cpu pids")
	err := m.Check(Limits{MemoryBytes: 1 << 30})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "memory controller is not available") {
		t.Fatalf("Check: %v", err)
	}
	if _, err := m.NewGroup("g", Limits{MemoryBytes: 1 << 30}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("NewGroup: %v", err)
	}
	if err := m.Check(Limits{Pids: 10}); err != nil {
		t.Fatalf("pids available: %v", err)
	}
	// The probe cgroup is gone again.
	ents, _ := os.ReadDir(filepath.Join(own, Top))
	for _, e := range ents {
		if e.IsDir() {
			t.Errorf("left %s", e.Name())
		}
	}
}

func TestV2RootNeedsNoLeaf(t *testing.T) {
	m, own := fakeV2(t, "memory pids")
	m.ownIsRoot = true
	if err := m.Check(Limits{Pids: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(own, selfLeaf)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("moved into a leaf from the root cgroup")
	}
}

// requireHost returns this host's Manager when it can enforce limits.
func requireHost(t *testing.T) *Manager {
	t.Helper()
	m, err := Host()
	ok := err == nil && m.Check(Limits{MemoryBytes: 64 << 20, Pids: 16, CPU: 1}) == nil
	testenv.Require(t, ok, fmt.Sprintf("writable cgroups with memory, pids, cpu (%v)", err))
	return m
}

func TestHostPlaceAndClose(t *testing.T) {
	m := requireHost(t)
	if m.Version() != 1 {
		t.Skip("placement by pid is the cgroup v1 path")
	}
	g, err := m.NewGroup(fmt.Sprintf("t-place-%d", os.Getpid()), Limits{MemoryBytes: 128 << 20, Pids: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	c, err := m.NewCommand(g, Limits{CPU: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "sleep 60 & sleep 60 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.Place(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	cg := readFile(t, fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid))
	for _, d := range c.Dirs() {
		if !strings.Contains(d, "/"+Top+"/"+g.Name()+"/cmd-") {
			t.Fatalf("command dir %s", d)
		}
	}
	for _, ctl := range []string{"memory", "pids", "cpu"} {
		if !strings.Contains(cg, ":"+ctl+":") || !regexpLine(cg, ctl, "/"+Top+"/"+g.Name()+"/cmd-") {
			t.Fatalf("process not in its %s cgroup:\n%s", ctl, cg)
		}
	}
	dirs := c.Dirs()
	if err := c.Close(); err != nil { // kills sh and both sleeps
		t.Fatal(err)
	}
	cmd.Wait()
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left", d)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}

// regexpLine reports whether the line of /proc/PID/cgroup for controller
// ctl contains sub.
func regexpLine(cg, ctl, sub string) bool {
	for _, line := range strings.Split(cg, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && contains(strings.Split(parts[1], ","), ctl) {
			return strings.Contains(parts[2], sub)
		}
	}
	return false
}

func TestV2SetLimits(t *testing.T) {
	m, own := fakeV2(t, "memory pids cpu")
	g, err := m.NewGroup("bob", Limits{MemoryBytes: 1 << 20, CPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.SetLimits(Limits{Pids: 9, CPU: 2}); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(own, Top, "bob")
	for f, v := range map[string]string{"memory.max": "max", "pids.max": "9", "cpu.max": "200000 100000"} {
		if got := readFile(t, filepath.Join(d, f)); got != v {
			t.Errorf("%s = %q, want %q", f, got, v)
		}
	}
	if g.Limits() != (Limits{Pids: 9, CPU: 2}) {
		t.Fatalf("Limits = %+v", g.Limits())
	}
}

func TestScrub(t *testing.T) {
	m := NewV1(map[Controller]string{Memory: "/sys/fs/cgroup/memory/a", Pids: "/sys/fs/cgroup/pids"})
	m.acct = "/sys/fs/cgroup/cpuacct"
	got := m.Scrub(errors.New("mkdir /sys/fs/cgroup/memory/a/agentbe/cmd-1: permission denied; /sys/fs/cgroup/pids/agentbe"))
	if want := "mkdir <cgroup>/agentbe/cmd-1: permission denied; <cgroup>/agentbe"; got != want {
		t.Fatalf("Scrub = %q, want %q", got, want)
	}
}
