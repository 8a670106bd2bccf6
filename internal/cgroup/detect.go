package cgroup

import (
	"os"
	"path"
	"strings"
	"sync"
)

// mount is one cgroup file system mount of /proc/self/mountinfo.
type mount struct {
	root, point string
	v2          bool
	controllers []string // version 1: the controllers of the hierarchy
}

// parseMountinfo returns the cgroup mounts of a /proc/<pid>/mountinfo.
func parseMountinfo(b []byte) []mount {
	var ms []mount
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		m := mount{root: unescapeMount(f[3]), point: unescapeMount(f[4])}
		switch g[0] {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			for _, o := range strings.Split(g[2], ",") {
				switch o {
				case "memory", "pids", "cpu", "cpuacct":
					m.controllers = append(m.controllers, o)
				}
			}
			if len(m.controllers) == 0 {
				continue
			}
		default:
			continue
		}
		ms = append(ms, m)
	}
	return ms
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, …).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) && isOctal(s[i+1:i+4]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return s[0] <= '3'
}

// parseProcCgroup returns the paths of /proc/<pid>/cgroup: by controller
// for version 1 hierarchies, and under "" the unified one.
func parseProcCgroup(b []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			if parts[0] == "0" {
				out[""] = parts[2]
			}
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// ownDir is the directory of the cgroup at path p (from /proc/self/cgroup)
// in mount m, or "" if p is not inside the mount.
func ownDir(m mount, p string) string {
	p, root := path.Clean("/"+p), path.Clean("/"+m.root)
	switch {
	case root == "/":
	case p == root:
		p = "/"
	case strings.HasPrefix(p, root+"/"):
		p = p[len(root):]
	default:
		return ""
	}
	return path.Join(m.point, p)
}

// detect builds the Manager of this host from its mount table and this
// process's cgroups. Version 1 controllers win over a unified mount that
// holds none (the hybrid layout).
func detect(mountinfo, proccg []byte, pid int) (*Manager, error) {
	ms := parseMountinfo(mountinfo)
	paths := parseProcCgroup(proccg)
	v1 := map[Controller]string{}
	var acct string
	var unified *mount
	for i := range ms {
		m := ms[i]
		if m.v2 {
			if unified == nil {
				unified = &ms[i]
			}
			continue
		}
		for _, c := range m.controllers {
			p, ok := paths[c]
			if !ok {
				continue
			}
			dir := ownDir(m, p)
			if dir == "" {
				continue
			}
			if c == "cpuacct" {
				if acct == "" {
					acct = dir
				}
				continue
			}
			if _, seen := v1[Controller(c)]; !seen {
				v1[Controller(c)] = dir
			}
		}
	}
	if len(v1) > 0 {
		m := NewV1(v1)
		m.acct = acct
		return m, nil
	}
	if unified != nil {
		if p, ok := paths[""]; ok {
			if dir := ownDir(*unified, p); dir != "" {
				return NewV2(dir, path.Clean("/"+p) == "/", pid), nil
			}
		}
	}
	return nil, unavailable("no cgroup file system with the memory, pids or cpu controller is mounted")
}

// Host returns the Manager of this process's cgroups (detected once).
func Host() (*Manager, error) { return host() }

var host = sync.OnceValues(func() (*Manager, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, unavailable("cannot read the mount table: %v", err)
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, unavailable("cannot read this process's cgroups: %v", err)
	}
	return detect(mi, cg, os.Getpid())
})
