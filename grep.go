package agentbe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"time"

	"github.com/agentbe/agent-backend/internal/fstools"
	"github.com/agentbe/agent-backend/internal/grep"
)

// Grep errors, matched with errors.Is.
var (
	// ErrGrepInvalid: the pattern, glob, type or output mode of a Grep is
	// not valid (the error's text says why, as ripgrep words it).
	ErrGrepInvalid = grep.ErrInvalid
)

// GrepOptions describe one content search (Grep). The fields are those of
// the grep MCP tool. The zero value of every limit is its default.
type GrepOptions struct {
	// Pattern is a regular expression in ripgrep's syntax (Rust regex):
	// Unicode-aware classes, matched line by line unless Multiline.
	Pattern string `json:"pattern"`
	// Path is the file or directory to search, relative to the backend's
	// root (or absolute under it); "" searches the root. Output paths
	// start with it as given.
	Path string `json:"path,omitempty"`
	// Glob is one gitignore-style glob ("*.go", "!vendor/**") choosing the
	// files searched, matched against paths relative to the root.
	Glob string `json:"glob,omitempty"`
	// Type is one ripgrep file type ("go", "py", "js", …).
	Type string `json:"type,omitempty"`
	// OutputMode is "files_with_matches" (""), "count" or "content".
	OutputMode      string `json:"outputMode,omitempty"`
	CaseInsensitive bool   `json:"caseInsensitive,omitempty"`
	// Multiline lets the pattern match across lines ("." matches "\n").
	Multiline bool `json:"multiline,omitempty"`
	// ContextBefore and ContextAfter are lines of context around matches
	// (content mode).
	ContextBefore int  `json:"contextBefore,omitempty"`
	ContextAfter  int  `json:"contextAfter,omitempty"`
	LineNumbers   bool `json:"lineNumbers,omitempty"`
	// HeadLimit keeps the first N lines of the text (0: all) and notes how
	// many more there were.
	HeadLimit int `json:"headLimit,omitempty"`

	// Timeout bounds the search (default 30 s); MaxOutputBytes the text
	// kept (default 4 MiB); MaxFiles the files searched (default 10^6).
	// A search that reaches one stops, keeps what it found, and says so
	// in GrepResult.Stopped and at the end of Text.
	Timeout        time.Duration `json:"-"`
	MaxOutputBytes int           `json:"-"`
	MaxFiles       int           `json:"-"`
}

// GrepResult is the outcome of Grep.
type GrepResult struct {
	// Text is the answer as the grep tool gives it: ripgrep's output
	// (paths; path:N; path:line or path:N:line with "--" between context
	// groups), "No matches found" when empty, the head-limit note, and a
	// note when the search stopped early.
	Text string `json:"text"`
	// Files are the files with output, in path order.
	Files []GrepFile `json:"files"`
	// Stopped says why the search ended before it was complete ("" when
	// it did not): the deadline, an output or file limit.
	Stopped string `json:"stopped,omitempty"`
	// Searched counts the files searched.
	Searched int `json:"searched"`
}

// GrepFile is one file of a GrepResult.
type GrepFile struct {
	Path  string     `json:"path"`
	Count int        `json:"count"`
	Lines []GrepLine `json:"lines,omitempty"`
	// Binary is ripgrep's note for a file holding a NUL byte.
	Binary string `json:"binary,omitempty"`
}

// GrepLine is a line of content mode: a match or context.
type GrepLine struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
	Match  bool   `json:"match"`
}

// Grep searches file contents below b's root, as the grep MCP tool does:
// ripgrep's pattern syntax, file choice (.gitignore, .ignore, hidden
// files, Glob, Type, binary files skipped) and output, implemented in Go
// without running any program. No link is followed out of the workspace
// (or scope); a path leaving it fails with ErrPathEscape.
//
// Local backends and their scopes search through their *os.Root; a
// Remote asks its daemon (POST /v1/fs/grep), which searches the same way.
// A Memory backend cannot search (NOT_IMPLEMENTED). The search stops when
// ctx is done. Invalid input fails with an error wrapping ErrGrepInvalid;
// a missing path with one wrapping fs.ErrNotExist. See docs/grep.md.
func Grep(ctx context.Context, b Backend, opts GrepOptions) (*GrepResult, error) {
	switch v := b.(type) {
	case *Local:
		return v.grep(ctx, opts)
	case *Scope:
		if err := v.alive("grep", opts.Path); err != nil {
			return nil, err
		}
		return Grep(ctx, v.inner, opts)
	case *Remote:
		return v.grep(ctx, opts)
	}
	return nil, &Error{Code: CodeNotImplemented, Op: "grep", Path: opts.Path, Backend: b.Kind(), Err: ErrNotImplemented}
}

func (o *GrepOptions) engine(rootDir string) grep.Options {
	return grep.Options{
		Pattern: o.Pattern, Path: o.Path, Glob: o.Glob, Type: o.Type, Mode: grep.Mode(o.OutputMode),
		CaseInsensitive: o.CaseInsensitive, Multiline: o.Multiline,
		Before: o.ContextBefore, After: o.ContextAfter, LineNumbers: o.LineNumbers, HeadLimit: o.HeadLimit,
		RootDir: rootDir, Timeout: o.Timeout, MaxOutputBytes: o.MaxOutputBytes, MaxFiles: o.MaxFiles,
	}
}

func (l *Local) grep(ctx context.Context, opts GrepOptions) (*GrepResult, error) {
	if err := l.alive("grep", opts.Path); err != nil {
		return nil, err
	}
	root, _, err := l.jail.get()
	if err != nil {
		return nil, l.fail("grep", opts.Path, err)
	}
	res, err := grep.Search(ctx, root, opts.engine(l.rootDir))
	if err != nil {
		return nil, grepError(KindLocal, opts.Path, err)
	}
	return grepResultOf(res), nil
}

// grepError wraps an error of the engine: its text stays the tool's
// (GrepToolText), its code says what kind it is.
func grepError(kind Kind, p string, err error) error {
	code := CodeReadFailed
	switch {
	case errors.Is(err, grep.ErrEscape):
		code = CodePathEscape
	case errors.Is(err, grep.ErrInvalid):
		code = CodeInvalidConfiguration
	}
	if errors.Is(err, grep.ErrNotFound) {
		err = &grepNotFound{err}
	}
	return &Error{Code: code, Op: "grep", Path: p, Backend: kind, Err: &grepToolError{text: grep.ToolText(err), err: err}}
}

// grepNotFound makes a missing path match fs.ErrNotExist.
type grepNotFound struct{ error }

func (e *grepNotFound) Unwrap() []error { return []error{e.error, fs.ErrNotExist} }

// grepToolError is an error of Grep whose text, as the grep tool shows it,
// is known (GrepToolText).
type grepToolError struct {
	text string
	err  error
}

func (e *grepToolError) Error() string { return e.err.Error() }
func (e *grepToolError) Unwrap() error { return e.err }

// GrepToolText returns the text the grep MCP tool shows for an error of
// Grep: ripgrep's message as the reference's tool words it ("Command
// execution failed with exit code 1: regex parse error: …"), or the
// error's own text for any other failure.
func GrepToolText(err error) string {
	var te *grepToolError
	if errors.As(err, &te) {
		return te.text
	}
	return err.Error()
}

func grepResultOf(r *grep.Result) *GrepResult {
	out := &GrepResult{Text: r.Format(), Stopped: r.Stopped, Searched: r.Searched, Files: make([]GrepFile, len(r.Files))}
	for i, f := range r.Files {
		g := GrepFile{Path: f.Path, Count: f.Count, Binary: f.Binary}
		if len(f.Lines) > 0 {
			g.Lines = make([]GrepLine, len(f.Lines))
			for j, l := range f.Lines {
				g.Lines[j] = GrepLine{Number: l.Number, Text: string(l.Text), Match: l.Match}
			}
		}
		out.Files[i] = g
	}
	return out
}

// grepTool serves the grep MCP tool on b through Grep. The reference
// registers grep only beside exec (its memory backend has neither); so do
// we, though Grep itself needs no command.
func grepTool(b Backend) fstools.GrepFunc {
	return func(ctx context.Context, r fstools.GrepRequest) (string, bool) {
		res, err := Grep(ctx, b, GrepOptions{
			Pattern: r.Pattern, Path: r.Path, Glob: r.Glob, Type: r.Type, OutputMode: r.OutputMode,
			CaseInsensitive: r.CaseInsensitive, Multiline: r.Multiline,
			ContextBefore: r.Before, ContextAfter: r.After, LineNumbers: r.LineNumbers, HeadLimit: r.HeadLimit,
		})
		if err != nil {
			return GrepToolText(err), true
		}
		return res.Text, false
	}
}

// grepWireError is the body the daemon's grep route answers a failed
// search with (status 400, 403 or 404): the tool's text and our code.
type grepWireError struct {
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// Code is the agentbe error code; Text the grep tool's text.
	Code string `json:"code"`
	Text string `json:"text"`
}

// maxGrepResponse bounds what a Remote reads of the daemon's grep answer:
// the search's own output limit (4 MiB by default) with the JSON around it.
const maxGrepResponse = 64 << 20

// grep is Grep for a Remote: POST /v1/fs/grep on the daemon, scoped like
// the Remote's other requests.
func (r *Remote) grep(ctx context.Context, opts GrepOptions) (*GrepResult, error) {
	if err := r.core.alive("grep", opts.Path); err != nil {
		return nil, err
	}
	body, _ := json.Marshal(opts)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.v1URL("/v1/fs/grep", nil), bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Code: CodeInvalidConfiguration, Op: "grep", Path: opts.Path, Backend: KindRemote, Err: err}
	}
	req.Header = r.mcpHeader(r.rel)
	req.Header.Set("Content-Type", "application/json")
	if opts.Timeout > 0 {
		req.Header.Set("X-Grep-Timeout-Ms", fmt.Sprint(opts.Timeout.Milliseconds()))
	}
	resp, err := (&http.Client{Transport: r.core.httpTransport()}).Do(req)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Op, e.Path = "grep", opts.Path
			return nil, e
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, connClosed("grep", opts.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxGrepResponse))
	if err != nil {
		return nil, connClosed("grep", opts.Path, err)
	}
	if resp.StatusCode == http.StatusOK {
		var res GrepResult
		if err := json.Unmarshal(data, &res); err != nil {
			return nil, &Error{Code: CodeReadFailed, Op: "grep", Path: opts.Path, Backend: KindRemote,
				Err: fmt.Errorf("bad answer from the daemon: %w", err)}
		}
		return &res, nil
	}
	var we grepWireError
	_ = json.Unmarshal(data, &we)
	msg := we.Detail
	if msg == "" {
		msg = errorMessage(data)
	}
	text := we.Text
	if text == "" {
		text = msg
	}
	e := &Error{Code: ErrorCode(we.Code), Op: "grep", Path: opts.Path, Backend: KindRemote}
	var cause error
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden && e.Code != CodePathEscape:
		e.Code = CodeInvalidConfiguration
		e.Err = fmt.Errorf("%w: the daemon refused the request (HTTP %d: %s)", ErrUnauthorized, resp.StatusCode, msg)
		return nil, e
	case resp.StatusCode == http.StatusNotImplemented:
		e.Code, cause = CodeNotImplemented, ErrNotImplemented
	case e.Code == CodePathEscape:
		cause = ErrPathEscape
	case e.Code == CodeInvalidConfiguration:
		cause = ErrGrepInvalid
	case resp.StatusCode == http.StatusNotFound:
		e.Code, cause = CodeReadFailed, fs.ErrNotExist
	default:
		if e.Code == "" {
			e.Code = CodeReadFailed
		}
	}
	e.Err = &grepToolError{text: text, err: &textError{msg: msg, is: cause}}
	return nil, e
}

// textError is an error with the daemon's text that matches a sentinel.
type textError struct {
	msg string
	is  error
}

func (e *textError) Error() string { return e.msg }
func (e *textError) Unwrap() error { return e.is }
