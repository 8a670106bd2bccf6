package watch

import (
	"fmt"
	"time"
)

// Op is what happened to a path.
type Op uint8

// The operations a feed reports. The zero Op is not used.
const (
	// Created: a new entry appeared at Path (created in the tree, moved
	// in from outside it, or found in a directory that appeared).
	Created Op = iota + 1
	// Written: the contents of the file at Path changed.
	Written
	// Removed: the entry at Path is gone (deleted, or moved out of the
	// tree).
	Removed
	// Renamed: the entry at OldPath is now at Path.
	Renamed
	// Rescan: the feed could not follow everything under Path ("." for
	// the whole tree); Note says why. The caller should list that subtree
	// again.
	Rescan
	// Ended: the feed stopped (its directory was removed or moved, or
	// the feed was closed); it is the last event and Note says why.
	Ended
)

var opNames = [...]string{Created: "created", Written: "written", Removed: "removed", Renamed: "renamed", Rescan: "rescan", Ended: "ended"}

// String returns the lower-case name of o ("created", "written", ...).
func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// MarshalText encodes o as its name.
func (o Op) MarshalText() ([]byte, error) {
	if int(o) >= len(opNames) || opNames[o] == "" {
		return nil, fmt.Errorf("watch: unknown Op %d", uint8(o))
	}
	return []byte(opNames[o]), nil
}

// UnmarshalText decodes a name written by MarshalText.
func (o *Op) UnmarshalText(b []byte) error {
	for i, n := range opNames {
		if n != "" && n == string(b) {
			*o = Op(i)
			return nil
		}
	}
	return fmt.Errorf("watch: unknown op %q", b)
}

// Kind is the type of the entry an event names.
type Kind uint8

// Entry kinds. A Rescan or Ended event has KindNone.
const (
	KindNone Kind = iota
	KindFile
	KindDir
	KindSymlink
	// KindOther: a FIFO, socket or device node.
	KindOther
)

var kindNames = [...]string{KindNone: "", KindFile: "file", KindDir: "dir", KindSymlink: "symlink", KindOther: "other"}

// String returns the name of k ("file", "dir", "symlink", "other", or ""
// for KindNone).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// MarshalText encodes k as its name.
func (k Kind) MarshalText() ([]byte, error) {
	if int(k) >= len(kindNames) {
		return nil, fmt.Errorf("watch: unknown Kind %d", uint8(k))
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText decodes a name written by MarshalText.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if n == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("watch: unknown kind %q", b)
}

// Event is one change reported by a feed.
type Event struct {
	// Seq numbers the feed's events 1, 2, 3, ... without gaps.
	Seq uint64 `json:"seq"`
	Op  Op     `json:"op"`
	// Path is slash-separated and relative to the watched directory; "."
	// is the directory itself.
	Path string `json:"path"`
	// OldPath is the former path of a Renamed entry.
	OldPath string `json:"oldPath,omitempty"`
	Kind    Kind   `json:"kind,omitempty"`
	// Note explains a Rescan or Ended event.
	Note string `json:"note,omitempty"`
	// Time is when the feed published the event.
	Time time.Time `json:"time"`
}

// String formats e for logs and test failures.
func (e Event) String() string {
	s := fmt.Sprintf("#%d %s %s", e.Seq, e.Op, e.Path)
	if e.Op == Renamed {
		s = fmt.Sprintf("#%d %s %s -> %s", e.Seq, e.Op, e.OldPath, e.Path)
	}
	if e.Kind != KindNone {
		s += " (" + e.Kind.String() + ")"
	}
	if e.Note != "" {
		s += ": " + e.Note
	}
	return s
}

// size estimates the memory e holds, for the feed's byte bound.
func (e *Event) size() int {
	return 96 + len(e.Path) + len(e.OldPath) + len(e.Note)
}
