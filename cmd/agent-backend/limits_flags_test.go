package main

import (
	"strings"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

func TestExecLimitFlags(t *testing.T) {
	cases := []struct {
		args    []string
		want    agentbe.ResourceLimits
		network agentbe.Network
		err     string
	}{
		{args: nil},
		{args: []string{"--exec-memory", "512M", "--exec-pids", "64", "--exec-cpu", "1.5", "--exec-timeout", "90s", "--exec-network", "none"},
			want: agentbe.ResourceLimits{MemoryBytes: 512 << 20, Pids: 64, CPU: 1.5, Timeout: 90 * time.Second}, network: agentbe.NetworkNone},
		{args: []string{"--exec-memory=1G", "--exec-timeout=600"}, want: agentbe.ResourceLimits{MemoryBytes: 1 << 30, Timeout: 10 * time.Minute}},
		{args: []string{"--exec-memory", "268435456", "--exec-network", "host"}, want: agentbe.ResourceLimits{MemoryBytes: 256 << 20}, network: agentbe.NetworkHost},
		{args: []string{"--exec-memory", "64kib"}, want: agentbe.ResourceLimits{MemoryBytes: 64 << 10}},
		{args: []string{"--exec-memory", "2GB"}, want: agentbe.ResourceLimits{MemoryBytes: 2 << 30}},
		{args: []string{"--exec-memory", "0"}, err: "--exec-memory must be a positive size"},
		{args: []string{"--exec-memory", "12T"}, err: "--exec-memory"},
		{args: []string{"--exec-memory", "-5M"}, err: "--exec-memory"},
		{args: []string{"--exec-memory", "99999999999G"}, err: "--exec-memory"},
		{args: []string{"--exec-pids", "0"}, err: "--exec-pids must be an integer"},
		{args: []string{"--exec-pids", "x"}, err: "--exec-pids"},
		{args: []string{"--exec-cpu", "0.001"}, err: "--exec-cpu must be a number of cores"},
		{args: []string{"--exec-cpu", "NaN"}, err: "--exec-cpu"},
		{args: []string{"--exec-timeout", "0"}, err: "--exec-timeout must be a positive"},
		{args: []string{"--exec-timeout", "-1s"}, err: "--exec-timeout"},
		{args: []string{"--exec-timeout", "soon"}, err: "--exec-timeout"},
		{args: []string{"--exec-network", "bridge"}, err: `--exec-network: invalid network mode "bridge"`},
		{args: []string{"--exec-memory"}, err: "--exec-memory requires a value"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			cfg, err := parseDaemonFlags(append([]string{"--rootDir", t.TempDir()}, c.args...))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ExecLimits != c.want || cfg.ExecNetwork != c.network {
				t.Fatalf("got %+v %q, want %+v %q", cfg.ExecLimits, cfg.ExecNetwork, c.want, c.network)
			}
		})
	}
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"1", "1K", "2MiB", "3gb", "", "K", "-1", "9223372036854775807", "8589934592G"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseBytes(s)
		if err == nil && n < 0 {
			t.Fatalf("parseBytes(%q) = %d", s, n)
		}
	})
}
