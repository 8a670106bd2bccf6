package fstools

import (
	"strconv"
	"time"

	"github.com/agentbe/agent-backend/mcp"
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

// DefaultMaxExecOutputBytes bounds the text of an exec result, measured
// JSON-escaped, when Limits.ExecOutputBytes is zero: 1 MiB.
const DefaultMaxExecOutputBytes = 1 << 20

// resultReserve is the room a tool's text leaves for the rest of its
// message: the JSON-RPC envelope, the request's id, the content item's
// fields.
const resultReserve = 4 << 10

// Limits are the bounds on what one tool call returns.
type Limits struct {
	// MessageBytes is the largest message the serving mcp.Server sends
	// (ServerOptions.MessageLimit): the tools keep their results within
	// it. Zero means mcp.DefaultMaxMessageBytes.
	MessageBytes int
	// ExecOutputBytes bounds the text of an exec result, measured
	// JSON-escaped (a control byte counts six); zero means
	// DefaultMaxExecOutputBytes. Longer output is cut on a UTF-8 boundary
	// and ends with a note giving its full length. It is always kept
	// within MessageBytes.
	ExecOutputBytes int
	// ProgressInterval is how often exec reports progress while a command
	// runs, to a request that asked for it (mcp.ToolCall.Progress); zero
	// means DefaultProgressInterval.
	ProgressInterval time.Duration
}

// DefaultProgressInterval is how often exec reports progress when
// Limits.ProgressInterval is zero: well within any client's request
// timeout, and one small message a second is nothing to send.
const DefaultProgressInterval = time.Second

// resultLimits are Limits with the defaults applied.
type resultLimits struct {
	message  int           // the whole response, encoded
	exec     int           // exec's text, escaped
	progress time.Duration // exec's progress interval
}

func (l Limits) effective() resultLimits {
	r := resultLimits{message: mcp.DefaultMaxMessageBytes, exec: DefaultMaxExecOutputBytes, progress: DefaultProgressInterval}
	if l.ProgressInterval > 0 {
		r.progress = l.ProgressInterval
	}
	if l.MessageBytes > 0 {
		r.message = l.MessageBytes
	}
	if l.ExecOutputBytes > 0 {
		r.exec = l.ExecOutputBytes
	}
	return r
}

// single is the budget of a text a result carries once (exec's).
func (l resultLimits) single() int { return min(l.exec, l.message-resultReserve) }

// text is the budget of the text of a TextResult, which carries it twice
// (content and structuredContent): the limit for the escaped text of
// read_text_file and the other text tools.
func (l resultLimits) text() int { return (l.message - resultReserve) / 2 }

// media is the largest file read_media_file returns: base64 makes 4 bytes
// of every 3, carried twice (content and structuredContent).
func (l resultLimits) media() int64 { return int64(l.text()) / 4 * 3 }

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

// outputLimit bounds the text a listing tool builds: the read limit, or
// what one result can carry when that is less. (The text is counted
// unescaped; the Server's own check catches what escaping adds.)
func (t *fsTools) outputLimit() int64 {
	return min(t.readLimit(), int64(t.lim.text()))
}

// outputTooLarge is the error of a listing whose text would exceed the limit.
func outputTooLarge(tool string, limit int64) error {
	return &toolError{msg: "Result too large: " + tool + " output exceeds the limit of " +
		strconv.FormatInt(limit, 10) + " bytes; list a smaller directory or exclude entries (excludePatterns)"}
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
