package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// execLimitFlags are the flags of the per-command resource limits and the
// network mode; parseExecLimits reads their values.
var execLimitFlags = []string{"--exec-memory", "--exec-pids", "--exec-cpu", "--exec-timeout", "--exec-network"}

// parseExecLimits turns the values of the --exec-* flags given (by name)
// into the limits of every command and its network mode.
func parseExecLimits(values map[string]string) (agentbe.ResourceLimits, agentbe.Network, error) {
	var l agentbe.ResourceLimits
	var err error
	if v, ok := values["--exec-memory"]; ok {
		if l.MemoryBytes, err = parseBytes(v); err != nil || l.MemoryBytes == 0 {
			return l, "", fmt.Errorf("--exec-memory must be a positive size in bytes, with an optional K, M or G suffix (powers of 1024), got %q", v)
		}
	}
	if v, ok := values["--exec-pids"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1<<22 {
			return l, "", fmt.Errorf("--exec-pids must be an integer between 1 and %d, got %q", 1<<22, v)
		}
		l.Pids = n
	}
	if v, ok := values["--exec-cpu"]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || f < 0.01 || f > 4096 {
			return l, "", fmt.Errorf("--exec-cpu must be a number of cores between 0.01 and 4096, got %q", v)
		}
		l.CPU = f
	}
	if v, ok := values["--exec-timeout"]; ok {
		if l.Timeout, err = parseTimeout(v); err != nil {
			return l, "", fmt.Errorf("--exec-timeout must be a positive Go duration (90s, 5m) or a number of seconds, got %q", v)
		}
	}
	var network agentbe.Network // "": host
	if v, ok := values["--exec-network"]; ok {
		switch agentbe.Network(v) {
		case agentbe.NetworkHost, agentbe.NetworkNone:
			network = agentbe.Network(v)
		default:
			return l, "", fmt.Errorf("--exec-network: invalid network mode %q (valid: host, none)", v)
		}
	}
	return l, network, nil
}

// parseBytes reads a size: digits with an optional K, M or G suffix
// (powers of 1024; KB, KiB and Ki are read alike, in any case).
func parseBytes(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		letter string
		mult   int64
	}{{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		for _, suf := range []string{u.letter + "IB", u.letter + "B", u.letter + "I", u.letter} {
			if strings.HasSuffix(t, suf) {
				t, mult = strings.TrimSuffix(t, suf), u.mult
				break
			}
		}
		if mult != 1 {
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return n * mult, nil
}

// parseTimeout reads a Go duration or a whole number of seconds; it must
// be positive.
func parseTimeout(s string) (time.Duration, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n <= 0 || n > math.MaxInt64/int64(time.Second) {
			return 0, fmt.Errorf("invalid timeout %q", s)
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("invalid timeout %q", s)
	}
	return d, nil
}
