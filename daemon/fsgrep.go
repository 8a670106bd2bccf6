package daemon

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// maxGrepBody bounds a POST /v1/fs/grep body; maxGrepTimeout the time a
// client may give a search (the engine's default, 30 s).
const (
	maxGrepBody    = 1 << 20
	maxGrepTimeout = 30 * time.Second
)

// fsGrep answers POST /v1/fs/grep: the body is the grep tool's arguments
// (agentbe.GrepOptions as JSON), the answer an agentbe.GrepResult. A
// search that fails answers problem+json with the agentbe code and the
// tool's text (400 for an invalid pattern, glob or type; 403 for a path
// out of the workspace; 404 for a missing path). Header X-Grep-Timeout-Ms
// shortens the search's time bound (30 s at most).
func (s *Server) fsGrep(w http.ResponseWriter, r *http.Request) {
	b, _, release, ok := s.v1Backend(w, r)
	if !ok {
		return
	}
	defer release()
	var opts agentbe.GrepOptions
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxGrepBody))
	if err := dec.Decode(&opts); err != nil {
		v1Problem(w, http.StatusBadRequest, "Invalid Request", "invalid request: the body must be the grep arguments as JSON: "+err.Error(),
			string(agentbe.CodeInvalidConfiguration), nil)
		return
	}
	switch opts.OutputMode {
	case "", "files_with_matches", "count", "content":
	default:
		v1Problem(w, http.StatusBadRequest, "Invalid Request", `invalid request: outputMode must be one of "content", "files_with_matches", "count"`,
			string(agentbe.CodeInvalidConfiguration), nil)
		return
	}
	if opts.ContextBefore < 0 || opts.ContextAfter < 0 || opts.HeadLimit < 0 {
		v1Problem(w, http.StatusBadRequest, "Invalid Request", "invalid request: contextBefore, contextAfter and headLimit must not be negative",
			string(agentbe.CodeInvalidConfiguration), nil)
		return
	}
	if ms, err := strconv.Atoi(r.Header.Get("X-Grep-Timeout-Ms")); err == nil && ms > 0 {
		opts.Timeout = min(time.Duration(ms)*time.Millisecond, maxGrepTimeout)
	}
	res, err := agentbe.Grep(r.Context(), b, opts)
	if err != nil {
		status, title, known := fsErrStatus(err, "Search failed",
			errStatus{agentbe.ErrGrepInvalid, http.StatusBadRequest, "Invalid Request"},
			errStatus{agentbe.ErrNotImplemented, http.StatusNotImplemented, "Not supported"})
		if !known && r.Context().Err() != nil {
			return
		}
		text := agentbe.GrepToolText(err)
		v1Problem(w, status, title, text, string(agentbe.CodeOf(err)), map[string]any{"text": text})
		return
	}
	writeJSON(w, http.StatusOK, res)
}
