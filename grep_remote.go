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
)

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
