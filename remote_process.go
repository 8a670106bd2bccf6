package agentbe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The Remote runs processes through the daemon's /v1/processes API (the
// one sandbox-agent's clients use): each call is an HTTP request with the
// Remote's token, and for a scope its X-Scope-Path, so a process belongs
// to the daemon's scope and outlives the connection that started it.
// Follow re-attaches by itself: when the stream breaks, it asks again from
// the last sequence it delivered.

// processURL is the daemon's /v1/processes URL with the path suffix.
func (r *Remote) processURL(suffix string) string {
	u := r.mcpURL()
	return strings.TrimSuffix(u, "/mcp") + "/v1/processes" + suffix
}

// processClient is the HTTP client of process requests (the MCP one's
// transport: keep-alive connections, closed on Destroy).
func (r *Remote) processClient() *http.Client {
	return &http.Client{Transport: mcpTransport{r.core.httpTransport()}}
}

// processRequest sends one request and decodes a JSON answer into out.
func (r *Remote) processRequest(ctx context.Context, method, suffix string, body, out any) error {
	if err := r.core.alive("process", ""); err != nil {
		return err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.processURL(suffix), rd)
	if err != nil {
		return &Error{Code: CodeExecError, Op: "process", Backend: KindRemote, Err: err}
	}
	req.Header = r.processHeader()
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.processClient().Do(req)
	if err != nil {
		return processLoss(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return processLoss(ctx, err)
	}
	if resp.StatusCode >= 300 {
		return processProblem(resp.StatusCode, data)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return &Error{Code: CodeExecError, Op: "process", Backend: KindRemote,
				Err: fmt.Errorf("bad answer from the daemon: %w", err)}
		}
	}
	return nil
}

func (r *Remote) processHeader() http.Header {
	h := r.core.header()
	if r.rel != "" && r.rel != "." {
		h.Set("X-Scope-Path", r.rel)
	}
	return h
}

// processLoss is the error of a request that did not get an answer.
func processLoss(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ae *Error
	if errors.As(err, &ae) {
		return err
	}
	return &Error{Code: CodeConnectionClosed, Op: "process", Backend: KindRemote,
		Err: &wrapped{msg: "process request", err: err, is: ErrConnectionClosed}}
}

// processProblem maps the daemon's problem+json answer to an *Error.
func processProblem(status int, body []byte) error {
	var p struct {
		Type   string `json:"type"`
		Detail string `json:"detail"`
	}
	_ = json.Unmarshal(body, &p)
	kind := strings.TrimPrefix(p.Type, "urn:sandbox-agent:error:")
	e := &Error{Op: "process", Backend: KindRemote, Reason: p.Detail}
	switch {
	case status == http.StatusNotFound:
		e.Code, e.Err = CodeProcessNotFound, ErrProcessNotFound
	case status == http.StatusConflict && strings.Contains(p.Detail, "limit"):
		e.Code, e.Err = CodeTooManyProcesses, ErrTooManyProcesses
	case status == http.StatusConflict && strings.Contains(p.Detail, "tty"):
		e.Code, e.Err = CodeProcessConflict, ErrNotTTY
	case status == http.StatusConflict && strings.Contains(p.Detail, "still running"):
		e.Code, e.Err = CodeProcessConflict, ErrProcessRunning
	case status == http.StatusConflict:
		e.Code, e.Err = CodeProcessConflict, ErrProcessExited
	case kind == "path_escape":
		e.Code, e.Err = CodePathEscape, ErrPathEscape
	case kind == "forbidden":
		e.Code, e.Err = CodeDangerousOperation, ErrDangerous
	case status == http.StatusUnauthorized:
		e.Code, e.Err = CodeInvalidConfiguration, ErrUnauthorized
	default:
		e.Code, e.Err = CodeExecError, errors.New("the daemon answered "+strconv.Itoa(status))
	}
	return e
}

// wireProcess is the daemon's ProcessInfo.
type wireProcess struct {
	ID          string   `json:"id"`
	Command     string   `json:"command"`
	Args        []string `json:"args"`
	Cwd         string   `json:"cwd"`
	TTY         bool     `json:"tty"`
	Status      string   `json:"status"`
	PID         int      `json:"pid"`
	ExitCode    *int     `json:"exitCode"`
	CreatedAtMs int64    `json:"createdAtMs"`
	ExitedAtMs  int64    `json:"exitedAtMs"`
}

func (w wireProcess) info() ProcessInfo {
	in := ProcessInfo{ID: w.ID, Command: w.Command, Args: w.Args, Dir: w.Cwd, TTY: w.TTY,
		Running: w.Status == "running", PID: w.PID, ExitCode: -1, StartedAt: time.UnixMilli(w.CreatedAtMs)}
	if !in.Running {
		in.PID = 0
		in.ExitedAt = time.UnixMilli(w.ExitedAtMs)
		if w.ExitCode != nil {
			in.ExitCode = *w.ExitCode
		}
	}
	return in
}

// StartProcess starts command on the daemon (POST /v1/processes); see
// ProcessRunner. A shell command line (opts.Args nil) runs as sh -c;
// opts.OutputBytes is the daemon's choice (its maxLogBytesPerProcess).
// The client-side dangerous-command check applies as for Exec; the daemon
// checks again.
func (r *Remote) StartProcess(ctx context.Context, command string, opts ProcessOptions) (*Process, error) {
	if strings.TrimSpace(command) == "" {
		return nil, &Error{Code: CodeEmptyCommand, Op: "process", Backend: KindRemote, Err: ErrEmptyCommand}
	}
	line, args := command, opts.Args
	if args == nil {
		command, args = "sh", []string{"-c", line}
	} else {
		line = "exec " + shellQuote(command)
		for _, a := range args {
			line += " " + shellQuote(a)
		}
	}
	if !r.core.cfg.AllowDangerous {
		if err := r.core.checker.Check(line); err != nil {
			return nil, fillError(err, "", KindRemote)
		}
	}
	env := mergeMaps(r.core.cfg.Env, opts.Env)
	if err := validateEnv(env); err != nil {
		return nil, &Error{Code: CodeExecError, Op: "process", Command: command, Backend: KindRemote, Err: err}
	}
	body := map[string]any{"command": command, "args": args, "tty": opts.TTY, "interactive": true}
	if opts.Dir != "" {
		body["cwd"] = opts.Dir
	}
	if env != nil {
		body["env"] = env
	}
	var w wireProcess
	if err := r.processRequest(ctx, "POST", "", body, &w); err != nil {
		return nil, err
	}
	p := &Process{id: w.ID, impl: &remoteProc{r: r, id: w.ID, tty: w.TTY}}
	if opts.TTY && opts.Cols > 0 && opts.Rows > 0 {
		_ = p.Resize(ctx, opts.Cols, opts.Rows)
	}
	return p, nil
}

// Process returns the process of that id in the Remote's scope.
func (r *Remote) Process(ctx context.Context, id string) (*Process, error) {
	var w wireProcess
	if err := r.processRequest(ctx, "GET", "/"+url.PathEscape(id), nil, &w); err != nil {
		return nil, err
	}
	return &Process{id: w.ID, impl: &remoteProc{r: r, id: w.ID, tty: w.TTY}}, nil
}

// Processes lists the processes of the Remote's scope.
func (r *Remote) Processes(ctx context.Context) ([]ProcessInfo, error) {
	var list struct {
		Processes []wireProcess `json:"processes"`
	}
	if err := r.processRequest(ctx, "GET", "", nil, &list); err != nil {
		return nil, err
	}
	out := make([]ProcessInfo, 0, len(list.Processes))
	for _, w := range list.Processes {
		out = append(out, w.info())
	}
	return out, nil
}

// RemoveProcess forgets an exited process (DELETE /v1/processes/{id}).
func (r *Remote) RemoveProcess(ctx context.Context, id string) error {
	return r.processRequest(ctx, "DELETE", "/"+url.PathEscape(id), nil, nil)
}

// remoteProc is a process on the daemon.
type remoteProc struct {
	r   *Remote
	id  string
	tty bool
}

func (p *remoteProc) path(suffix string) string { return "/" + url.PathEscape(p.id) + suffix }

func (p *remoteProc) info(ctx context.Context) (ProcessInfo, error) {
	var w wireProcess
	if err := p.r.processRequest(ctx, "GET", p.path(""), nil, &w); err != nil {
		return ProcessInfo{}, err
	}
	return w.info(), nil
}

// wait polls the process's state (the API has no wait), backing off to
// half a second.
func (p *remoteProc) wait(ctx context.Context) (ProcessInfo, error) {
	delay := 20 * time.Millisecond
	for {
		in, err := p.info(ctx)
		if err != nil || !in.Running {
			return in, err
		}
		select {
		case <-ctx.Done():
			return ProcessInfo{}, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 500*time.Millisecond)
	}
}

func (p *remoteProc) write(ctx context.Context, b []byte) (int, error) {
	var out struct {
		BytesWritten int `json:"bytesWritten"`
	}
	const chunk = 48 << 10 // under the daemon's default maxInputBytesPerRequest
	n := 0
	for len(b) > 0 || n == 0 {
		part := b[:min(len(b), chunk)]
		err := p.r.processRequest(ctx, "POST", p.path("/input"),
			map[string]string{"data": base64.StdEncoding.EncodeToString(part), "encoding": "base64"}, &out)
		if err != nil {
			return n, err
		}
		n += out.BytesWritten
		b = b[len(part):]
		if len(b) == 0 {
			break
		}
	}
	return n, nil
}

// closeStdin: the API has no way to close a pipe's stdin; on a terminal it
// sends ^D.
func (p *remoteProc) closeStdin(ctx context.Context) error {
	if p.tty {
		_, err := p.write(ctx, []byte{4})
		return err
	}
	return &Error{Code: CodeNotImplemented, Op: "process close stdin", Backend: KindRemote, Err: ErrNotImplemented}
}

func (p *remoteProc) signal(ctx context.Context, sig Signal) error {
	switch sig {
	case SIGTERM:
		return p.r.processRequest(ctx, "POST", p.path("/stop"), nil, nil)
	case SIGKILL:
		return p.r.processRequest(ctx, "POST", p.path("/kill"), nil, nil)
	}
	return &Error{Code: CodeNotImplemented, Op: "process signal", Backend: KindRemote,
		Reason: "the daemon's API sends TERM (stop) and KILL only", Err: ErrNotImplemented}
}

func (p *remoteProc) resize(ctx context.Context, cols, rows int) error {
	return p.r.processRequest(ctx, "POST", p.path("/terminal/resize"), map[string]int{"cols": cols, "rows": rows}, nil)
}

// wireEntry is a daemon log entry.
type wireEntry struct {
	Sequence    uint64 `json:"sequence"`
	Stream      string `json:"stream"`
	TimestampMs int64  `json:"timestampMs"`
	Data        string `json:"data"`
}

func (w wireEntry) entry() (OutputEntry, error) {
	data, err := base64.StdEncoding.DecodeString(w.Data)
	return OutputEntry{Seq: w.Sequence, Stream: Stream(w.Stream), Time: time.UnixMilli(w.TimestampMs), Data: data}, err
}

// output reads the log; following, it streams it and re-attaches from
// the last delivered sequence when the stream breaks, until the process
// has exited and everything after that sequence was delivered.
func (p *remoteProc) output(ctx context.Context, since uint64, follow bool, fn func(OutputEntry) error) error {
	deliver := func(w wireEntry) error {
		e, err := w.entry()
		if err != nil {
			return &Error{Code: CodeExecError, Op: "process output", Backend: KindRemote, Err: err}
		}
		if e.Seq <= since {
			return nil // already delivered (a replay after re-attaching)
		}
		if e.Seq > since+1 {
			e.Dropped = e.Seq - since - 1
		}
		since = e.Seq
		return fn(e)
	}
	drain := func() error {
		var logs struct {
			Entries []wireEntry `json:"entries"`
		}
		if err := p.r.processRequest(ctx, "GET", p.path("/logs?since="+strconv.FormatUint(since, 10)), nil, &logs); err != nil {
			return err
		}
		for _, w := range logs.Entries {
			if err := deliver(w); err != nil {
				return err
			}
		}
		return nil
	}
	if !follow {
		return drain()
	}
	delay := 20 * time.Millisecond
	for {
		// Is it over? Then what is left is all in the ring.
		in, err := p.info(ctx)
		if err != nil && !errors.Is(err, ErrConnectionClosed) {
			return err
		}
		if err == nil && !in.Running {
			return drain()
		}
		if err == nil {
			err = p.stream(ctx, &since, deliver)
		}
		var fnErr *followStop
		switch {
		case errors.As(err, &fnErr):
			return fnErr.err
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil:
			delay = 20 * time.Millisecond
			continue
		}
		if aliveErr := p.r.core.alive("process", ""); aliveErr != nil {
			return aliveErr
		}
		// The stream broke: re-attach after a pause.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, time.Second)
	}
}

// followStop carries the error fn returned out of stream.
type followStop struct{ err error }

func (f *followStop) Error() string { return f.err.Error() }

// stream follows the log once (SSE) until the process has exited (seen
// on a keep-alive), the connection breaks (an error) or ctx is done.
func (p *remoteProc) stream(ctx context.Context, since *uint64, deliver func(wireEntry) error) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, "GET",
		p.r.processURL(p.path("/logs?follow=true&since="+strconv.FormatUint(*since, 10))), nil)
	if err != nil {
		return err
	}
	req.Header = p.r.processHeader()
	req.Header.Set("Accept", "text/event-stream")
	resp, err := p.r.processClient().Do(req)
	if err != nil {
		return processLoss(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return processProblem(resp.StatusCode, body)
	}
	// The stream stays open after the process exited: check on every
	// keep-alive whether it has.
	exited := make(chan struct{})
	go func() {
		if _, err := p.wait(sctx); err == nil {
			close(exited)
			// Entries still in flight arrive before a last keep-alive.
			time.Sleep(50 * time.Millisecond)
			cancel()
		}
	}()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var w wireEntry
		if err := json.Unmarshal([]byte(data), &w); err != nil {
			continue
		}
		if err := deliver(w); err != nil {
			return &followStop{err}
		}
	}
	select {
	case <-exited:
		return nil // the caller drains what is left
	default:
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	err = sc.Err()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return &Error{Code: CodeConnectionClosed, Op: "process output", Backend: KindRemote,
		Err: &wrapped{msg: "log stream", err: err, is: ErrConnectionClosed}}
}

var _ ProcessRunner = (*Remote)(nil)
