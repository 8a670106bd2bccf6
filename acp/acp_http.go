package acp

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/sse"
)

// acpList answers GET /v1/acp: the instances visible from the request's
// backend (scope), with their process status.
func (h *Handler) acpList(w http.ResponseWriter, r *http.Request) {
	b, release, ok := h.backend(w, r)
	if !ok {
		return
	}
	servers := h.visible(r, b)
	release()
	writeJSON(w, http.StatusOK, map[string]any{"servers": servers})
}

// visible describes the instances started in b's scope and r's
// partition: another scope's or partition's are neither listed nor
// counted in an agent's serverStatus.
func (h *Handler) visible(r *http.Request, b agentbe.Backend) []InstanceInfo {
	root, part := b.RootDir(), h.partition(r).Key
	return h.proxy.list(func(in *Instance) bool { return in.part == part && in.root == root })
}

func sessionNotFound(id string) *problemError {
	p := problem(http.StatusNotFound, "session_not_found", "Session Not Found", "session not found: "+id)
	p.Extra = map[string]any{"sessionId": id}
	return p
}

// instanceFor returns in when it is visible from the request's scope, or
// nil: an instance started in another scope is reported as missing. The
// backend is resolved only when there is an instance to check; when ok is
// false the request was answered.
func (h *Handler) instanceFor(w http.ResponseWriter, r *http.Request, in *Instance) (*Instance, bool) {
	if in == nil {
		return nil, true
	}
	b, release, ok := h.backend(w, r)
	if !ok {
		return nil, false
	}
	root := b.RootDir()
	release()
	if in.root != root {
		return nil, true
	}
	return in, true
}

// acpPost answers POST /v1/acp/{server_id}: forward one JSON-RPC envelope,
// creating the instance on the first POST (which needs ?agent=).
func (h *Handler) acpPost(w http.ResponseWriter, r *http.Request) {
	if !isJSON(r.Header.Get("Content-Type")) {
		writeProblem(w, unsupportedMedia("content-type must be application/json"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(h.proxy.cfg.maxMessageBytes())))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeProblem(w, tooLarge("message larger than "+strconv.FormatInt(mbe.Limit, 10)+" bytes"))
			return
		}
		writeProblem(w, badRequest("cannot read body"))
		return
	}
	env, err := parseEnvelope(body)
	if err != nil {
		if errors.Is(err, errNotObject) {
			writeProblem(w, badRequest(err.Error()))
		} else {
			writeProblem(w, badRequest("invalid JSON body: "+err.Error()))
		}
		return
	}
	in, ok := h.attach(w, r, r.PathValue("server_id"), r.URL.Query().Get("agent"))
	if !ok {
		return
	}
	resp, err := in.send(r.Context(), body, env)
	switch {
	case err != nil && r.Context().Err() != nil:
		return // the client went away; a late response still reaches SSE
	case err != nil:
		writeProblem(w, err)
	case resp == nil:
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusAccepted)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(resp)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(resp)
	}
}

// attach returns the instance a POST goes to: the one id names in the
// request's scope, or else a new one for agentID, which is then required.
// The request's backend is resolved at most once, and only when needed;
// when ok is false the request was answered.
func (h *Handler) attach(w http.ResponseWriter, r *http.Request, id, agentID string) (*Instance, bool) {
	var b agentbe.Backend
	release := func() {}
	part := h.partition(r)
	if in := h.proxy.get(part.Key, id); in != nil {
		var ok bool
		if b, release, ok = h.backend(w, r); !ok {
			return nil, false
		}
		if in.root == b.RootDir() {
			release()
			if agentID != "" && agentID != in.agent {
				writeProblem(w, agentConflict(id, in.agent, agentID))
				return nil, false
			}
			return in, true
		}
		// Started in another scope: as if missing (Bootstrap refuses it).
	}
	a, known := h.agents.Get(agentID)
	var p *problemError
	switch {
	case agentID == "":
		p = badRequest("missing required 'agent' query parameter for first POST to /v1/acp/" + id)
	case !validServerID(id):
		p = badRequest("server id must be 1 to 128 printable characters")
	case !known:
		p = unsupportedAgent(http.StatusBadRequest, agentID)
	}
	if p != nil {
		release()
		writeProblem(w, p)
		return nil, false
	}
	if b == nil {
		var ok bool
		if b, release, ok = h.backend(w, r); !ok {
			return nil, false
		}
	}
	in, err := h.proxy.bootstrap(r.Context(), part, id, a, b, release)
	if err != nil {
		writeProblem(w, err)
		return nil, false
	}
	return in, true
}

// acpDelete answers DELETE /v1/acp/{server_id}: 204 whether or not the
// instance existed; the process group is killed and reaped (bounded by
// ProxyConfig.StopWait).
func (h *Handler) acpDelete(w http.ResponseWriter, r *http.Request) {
	in, ok := h.instanceFor(w, r, h.proxy.get(h.partition(r).Key, r.PathValue("server_id")))
	if !ok {
		return
	}
	if in != nil {
		h.proxy.forget(r.Context(), in, "deleted") // not an instance that replaced it meanwhile
	}
	w.WriteHeader(http.StatusNoContent)
}

// acpStream answers GET /v1/acp/{server_id} with the SSE stream of the
// agent's messages: replay after Last-Event-ID (everything kept without
// it), then live events, a keepalive comment every KeepAlive. When events
// the client asked for were evicted from the ring (or the id is unknown to
// this instance), an "event: gap" with {"lastEventId","firstAvailableId"}
// comes first and replay starts at the oldest event kept. The stream ends
// when the instance is deleted.
func (h *Handler) acpStream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("server_id")
	last, err := ParseLastEventID(r.Header.Get("Last-Event-ID"))
	if err != nil {
		writeProblem(w, badRequest(err.Error()))
		return
	}
	in, ok := h.instanceFor(w, r, h.proxy.waitFor(r.Context(), h.partition(r).Key, id, orDefault(h.cfg.AttachWait, DefaultAttachWait)))
	if !ok {
		return
	}
	if in == nil {
		writeProblem(w, sessionNotFound(id))
		return
	}
	stream, err := sse.Start(w, streamWriteTimeout)
	if err != nil {
		return
	}
	keep := time.NewTicker(orDefault(h.cfg.KeepAlive, DefaultKeepAlive))
	defer keep.Stop()
	var buf []byte
	for {
		s := in.ring.Since(last)
		buf = buf[:0]
		if s.Gap {
			buf = appendSSE(buf, "gap", 0, []byte(`{"lastEventId":`+strconv.FormatUint(last, 10)+
				`,"firstAvailableId":`+strconv.FormatUint(s.Oldest, 10)+`}`))
		}
		for _, e := range s.Events {
			buf = appendSSE(buf, "message", e.ID, e.Data)
			last = e.ID
		}
		if s.Gap && len(s.Events) == 0 {
			last = s.Last
		}
		if len(buf) > 0 && stream.Write(buf) != nil {
			return
		}
		if s.Closed {
			return
		}
		select {
		case <-s.Wake:
		case <-keep.C:
			if stream.Write([]byte(": keepalive\n\n")) != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// validServerID bounds the client-chosen server id: it is only a map key
// and appears in messages and listings, so 1 to 128 bytes of printable
// text.
func validServerID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return false
		}
	}
	return true
}
