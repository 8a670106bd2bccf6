package watch

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// script replays changes (one per line: "<ms> <what> <path> [<path>]")
// through a coalescer, running its ticks when due as the reader does, and
// returns what it published as "<op> <path>@<ms>" strings.
func script(t *testing.T, cfg Config, lines string) []string {
	t.Helper()
	cfg = cfg.withDefaults()
	t0 := time.Unix(1000, 0)
	c := newCoalescer(&cfg, t0)
	now := t0
	var out []string
	collect := func() {
		for _, e := range c.take() {
			s := e.Op.String() + " " + e.Path
			if e.Op == Renamed {
				s = "renamed " + e.OldPath + "->" + e.Path
			}
			out = append(out, fmt.Sprintf("%s@%d", s, now.Sub(t0).Milliseconds()))
		}
	}
	advance := func(to time.Time) {
		for i := 0; ; i++ {
			if i > 100000 {
				t.Fatal("coalescer makes no progress")
			}
			d, ok := c.deadline()
			if !ok || d.After(to) {
				break
			}
			if d.After(now) {
				now = d
			}
			c.tick(now)
			collect()
		}
		now = to
	}
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		f := strings.Fields(line)
		var ms int
		fmt.Sscan(f[0], &ms)
		advance(t0.Add(time.Duration(ms) * time.Millisecond))
		switch f[1] {
		case "create":
			c.created(now, f[2], KindFile)
		case "mkdir":
			c.created(now, f[2], KindDir)
		case "write":
			c.written(now, f[2], true)
		case "modify":
			c.written(now, f[2], false)
		case "rm":
			c.removed(now, f[2], KindFile)
		case "rmdir":
			c.removed(now, f[2], KindDir)
		case "mv":
			c.renamed(now, f[2], f[3], KindFile)
		case "mvdir":
			c.renamed(now, f[2], f[3], KindDir)
		case "rescan":
			c.rescan(now, f[2], "test")
		case "drain":
			c.drain(now)
		default:
			t.Fatalf("bad script line %q", line)
		}
		collect()
	}
	advance(now.Add(10 * time.Second))
	return out
}

func TestCoalescer(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		script string
		want   string
	}{
		{"one write", Config{}, `
			0 write f`,
			`written f@0`},
		{"burst of closed writes: one now, one at the window's end", Config{}, `
			0 write f
			1 write f
			2 write f
			30 write f`,
			`written f@0, written f@50`},
		{"quiet after the burst: nothing more", Config{}, `
			0 write f
			10 write f
			200 write f`,
			`written f@0, written f@50, written f@200`},
		{"long writer: one per window", Config{}, `
			0 write f
			20 write f
			40 write f
			60 write f
			80 write f
			99 write f`,
			`written f@0, written f@50, written f@100`},
		{"writes in progress wait for the close", Config{}, `
			0 modify f
			5 modify f
			10 write f`,
			`written f@10`},
		{"writes in progress without a close: at the window's end", Config{}, `
			0 modify f
			30 modify f`,
			`written f@50`},
		{"created then written", Config{}, `
			0 create f
			1 modify f
			2 write f`,
			`created f@0, written f@50`},
		{"created twice (listing and event)", Config{}, `
			0 create f
			1 create f`,
			`created f@0`},
		{"created again after removal", Config{}, `
			0 create f
			1 rm f
			2 create f`,
			`created f@0, removed f@1, created f@2`},
		{"removal drops a pending write", Config{}, `
			0 write f
			10 write f
			20 rm f`,
			`written f@0, removed f@20`},
		{"rename reports the pending write first", Config{}, `
			0 write f
			10 write f
			20 mv f g
			25 write g`,
			`written f@0, written f@20, renamed f->g@20, written g@25`},
		{"rename over a pending file drops its write", Config{}, `
			0 write g
			10 write g
			20 mv f g`,
			`written g@0, renamed f->g@20`},
		{"directory rename reports every pending write first", Config{}, `
			0 write d/f
			10 write d/f
			20 mvdir d e
			30 write e/f`,
			`written d/f@0, written d/f@20, renamed d->e@20, written e/f@30`},
		{"directory gone: its files' pending writes dropped", Config{}, `
			0 write d/f
			0 write dd
			10 write d/f
			10 write dd
			20 rmdir d`,
			`written d/f@0, written dd@0, removed d@20, written dd@50`},
		{"directories are not coalesced", Config{}, `
			0 mkdir d
			1 rmdir d
			2 mkdir d`,
			`created d@0, removed d@1, created d@2`},
		{"rate: the rest waits its turn, in order", Config{Rate: 2}, `
			0 create a
			0 create b
			0 create c
			0 create d
			0 rm a`,
			`created a@0, created b@0, created c@500, created d@1000, removed a@1500`},
		{"rate: a write merges into a waiting one", Config{Rate: 1, MaxTable: 1}, `
			0 create x
			0 write y
			1 write y
			2 write y`,
			`created x@0, written y@1000`},
		{"rate: a write after a waiting removal is kept", Config{Rate: 1, MaxTable: 4}, `
			0 create x
			0 write y
			1 rm y
			2 write y`,
			`created x@0, written y@1000, removed y@2000, written y@3000`},
		{"flood: dropped for one rescan after it", Config{Rate: 1, MaxTable: 2}, `
			0 create a
			0 create b
			0 create c
			0 create d
			10 create e
			40 create f`,
			`created a@0, rescan .@90`},
		{"flood: the rescan comes within a second under a steady flood", Config{Rate: 1, MaxTable: 1}, `
			0 create a
			0 create b
			0 create c
			40 create d
			80 create e
			120 create f
			160 create g
			200 create h
			240 create i
			280 create j
			320 create k
			360 create l
			400 create m
			440 create n
			480 create o
			520 create p
			560 create q
			600 create r
			640 create s
			680 create t
			720 create u
			760 create v
			800 create w
			840 create x
			880 create y
			920 create z
			960 create aa
			999 create ab`,
			`created a@0, rescan .@1000`},
		{"drain publishes everything at once", Config{Rate: 1}, `
			0 create a
			0 create b
			1 write c
			2 write c
			3 drain`,
			`created a@0, created b@3, written c@3`},
		{"rescan passes through", Config{}, `
			0 rescan d`,
			`rescan d@0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(script(t, tt.cfg, tt.script), ", ")
			if got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestCoalescerBounded: however many paths are written, the tables stay
// within MaxTable and every path's last write is reported.
func TestCoalescerBounded(t *testing.T) {
	cfg := (&Config{MaxTable: 64, Rate: 1 << 30}).withDefaults()
	t0 := time.Unix(1000, 0)
	c := newCoalescer(&cfg, t0)
	reported := map[string]bool{}
	now := t0
	for round := range 3 {
		for i := range 1000 {
			now = now.Add(time.Microsecond)
			c.written(now, fmt.Sprintf("f%d", i), round%2 == 0)
			if len(c.recent) > 64 || len(c.expiry) > 4*64+1 || len(c.backlog) > 64 {
				t.Fatalf("tables %d %d %d", len(c.recent), len(c.expiry), len(c.backlog))
			}
		}
	}
	for range 10 {
		now = now.Add(cfg.Window)
		c.tick(now)
	}
	for _, e := range c.take() {
		reported[e.Path] = true
	}
	for i := range 1000 {
		if !reported[fmt.Sprintf("f%d", i)] {
			t.Fatalf("f%d never reported", i)
		}
	}
	if len(c.recent) != 0 || len(c.expiry) != 0 {
		t.Fatalf("tables not emptied: %d %d", len(c.recent), len(c.expiry))
	}
}
