package testenv

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"os"
	"strconv"
	"sync/atomic"
)

var markerSeq atomic.Uint32

// SleepMarker returns an argument for sleep(1) (a whole number of seconds,
// a point, then digits) that no other process on the machine carries: it
// holds this process's ID, a per-call sequence number and random digits.
// A test that starts "sleep " + SleepMarker() finds that process, and only
// it, with ProcessesWith, however many other test runs (or stray sleeps of
// earlier ones) share the machine.
func SleepMarker() string {
	var b [4]byte
	rand.Read(b[:])
	r := binary.BigEndian.Uint32(b[:]) % 1_000_000
	return "3600." + strconv.Itoa(os.Getpid()) + strconv.Itoa(int(markerSeq.Add(1))+1000) + strconv.Itoa(int(r)+1_000_000)
}

// ProcessesWith lists the live processes whose command line contains
// marker (a SleepMarker or another string unique to the test), as
// "PID: argv" lines. Zombies are left out: they have run to their end and
// only wait to be reaped.
func ProcessesWith(marker string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cl, []byte(marker)) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && bytes.Contains(st, []byte(") Z ")) {
			continue
		}
		out = append(out, e.Name()+": "+string(bytes.TrimRight(bytes.ReplaceAll(cl, []byte{0}, []byte{' '}), " ")))
	}
	return out
}
