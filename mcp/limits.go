package mcp

import (
	"context"
	"strconv"
)

// DefaultMaxReadBytes is the read limit of the file tools on a Workspace
// that does not implement ReadLimiter (64 MiB).
const DefaultMaxReadBytes = 64 << 20

// ReadLimiter is an optional Workspace extension: MaxReadBytes bounds what a
// file tool reads into memory (a whole file for read_text_file,
// read_multiple_files, read_media_file and edit_file; the lines kept by
// head and tail) and the size of the text a listing tool builds
// (directory_tree, search_files). A tool that would go over it fails with
// an error naming the limit, before reading that much. Every agentbe
// backend implements it (LocalConfig.MaxReadBytes); a value <= 0 means
// DefaultMaxReadBytes.
type ReadLimiter interface {
	MaxReadBytes() int64
}

// Bounds of the tools that walk directories and match globs, so that one
// request cannot take unbounded time or memory.
const (
	// maxWalkDepth bounds how deep directory_tree and search_files descend
	// below their start directory.
	maxWalkDepth = 256
	// maxPatternBytes bounds a glob pattern (minimatch's own limit).
	maxPatternBytes = 64 << 10
	// maxBraceBytes bounds the total size of a pattern's brace expansions.
	maxBraceBytes = 256 << 10
	// maxEditWorkFactor bounds edit_file: its edits together may scan at
	// most this many times the read limit (64 edits of a file at the limit).
	maxEditWorkFactor = 64
)

func (t *fsTools) readLimit() int64 {
	if r, ok := t.ws.(ReadLimiter); ok {
		if n := r.MaxReadBytes(); n > 0 {
			return n
		}
	}
	return DefaultMaxReadBytes
}

// tooLarge is the error of a read that would exceed the limit; size < 0
// means "more than the limit".
func tooLarge(real string, size, limit int64) error {
	lim := strconv.FormatInt(limit, 10)
	if size < 0 {
		return &toolError{msg: "File too large: " + real + " is larger than the read limit of " + lim + " bytes"}
	}
	return &toolError{msg: "File too large: " + real + " is " + strconv.FormatInt(size, 10) +
		" bytes, over the read limit of " + lim + " bytes"}
}

// outputTooLarge is the error of a listing whose text would exceed the limit.
func outputTooLarge(tool string, limit int64) error {
	return &toolError{msg: "Result too large: " + tool + " output exceeds the limit of " +
		strconv.FormatInt(limit, 10) + " bytes"}
}

// maxWalkEntries bounds the entries one search_files call visits (a
// variable only so that a test can lower it).
var maxWalkEntries = 1 << 20

// tooManyEntries is the error of a walk over more than maxWalkEntries.
func tooManyEntries(dir string) error {
	return &toolError{msg: "Too many entries: search_files visits at most " + strconv.Itoa(maxWalkEntries) +
		" entries below " + dir}
}

// tooDeep is the error of a walk below maxWalkDepth levels.
func tooDeep(dir string) error {
	return &toolError{msg: "Directory tree too deep: " + dir + " is more than " +
		strconv.Itoa(maxWalkDepth) + " levels below the starting directory"}
}

// ctxErr is checked in every loop of the tools, so a cancelled or timed-out
// call stops its work.
func ctxErr(ctx context.Context) error { return context.Cause(ctx) }
