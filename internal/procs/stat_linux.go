package procs

import (
	"bytes"
	"os"
	"strconv"
)

// procStat is what the reaper and ParentGroup read of /proc/PID/stat.
type procStat struct {
	state      byte
	ppid, pgid int
	start      uint64 // clock ticks after boot
}

// ParentGroup returns the parent and the process group of process pid, as
// /proc shows them; ok is false when it has none to show (the process is
// gone).
func ParentGroup(pid int) (ppid, pgid int, ok bool) {
	st, ok := readProcStat(pid)
	return st.ppid, st.pgid, ok
}

func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	return parseProcStat(b)
}

// parseProcStat parses a /proc/PID/stat line. The command name (field 2)
// is in parentheses and may itself hold spaces and parentheses, so the
// fields are counted from the last ')'.
func parseProcStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[2] field 5 (pgrp),
	// f[19] field 22 (starttime).
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], ppid: ppid, pgid: pgid, start: start}, true
}
