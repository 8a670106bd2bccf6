package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strconv"

	agentbe "github.com/agentbe/agent-backend"
)

// configKind is one of the directory-scoped config stores: entries are kept
// by name in <directory>/.sandbox-agent/config/<name>.json (sandbox-agent's
// location, so both tools read the same files), written atomically.
type configKind struct {
	name     string // "mcp" or "skills"
	param    string // the entry-name query parameter
	prefix   string // sessionId prefix in 404 bodies
	validate func(json.RawMessage) error
}

var (
	mcpConfig    = configKind{name: "mcp", param: "mcpName", prefix: "mcp:", validate: validateMCPEntry}
	skillsConfig = configKind{name: "skills", param: "skillName", prefix: "skills:", validate: validateSkillsEntry}
)

func (k configKind) file(dir string) string {
	return path.Join(dir, ".sandbox-agent/config", k.name+".json")
}

// configRoute adapts one method's handler of kind k: it checks the
// directory and entry-name parameters, then resolves the request's backend
// (answering a failure itself) and releases it when fn returns.
func (h *Handler) configRoute(k configKind, fn func(w http.ResponseWriter, r *http.Request, b agentbe.Backend, k configKind, dir, name string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		dir, name := q.Get("directory"), q.Get(k.param)
		if dir == "" || name == "" {
			writeProblem(w, badRequest("'directory' and '"+k.param+"' query parameters are required"))
			return
		}
		if len(name) > 256 {
			writeProblem(w, badRequest(k.param+" too long"))
			return
		}
		b, release, ok := h.backend(w, r)
		if !ok {
			return
		}
		defer release()
		fn(w, r, b, k, dir, name)
	}
}

// readConfig returns the store's entries; a missing file is empty.
func readConfig(ctx context.Context, b agentbe.Backend, k configKind, dir string) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	file := k.file(dir)
	f, err := b.Open(ctx, file)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fsProblem(err, file)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, DefaultMaxConfigBytes+1))
	if err != nil {
		return nil, fsProblem(err, file)
	}
	if len(data) > DefaultMaxConfigBytes {
		return nil, problem(http.StatusInsufficientStorage, "too_large", "Config Too Large", "config file too large")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, problem(http.StatusInternalServerError, "invalid_config", "Invalid Config",
			"stored "+k.name+" config is not a JSON object")
	}
	return m, nil
}

func writeConfig(ctx context.Context, b agentbe.Backend, k configKind, dir string, m map[string]json.RawMessage) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := b.Write(ctx, k.file(dir), data); err != nil {
		return fsProblem(err, k.file(dir))
	}
	return nil
}

func (h *Handler) configGet(w http.ResponseWriter, r *http.Request, b agentbe.Backend, k configKind, dir, name string) {
	m, err := readConfig(r.Context(), b, k, dir)
	if err != nil {
		writeProblem(w, err)
		return
	}
	v, ok := m[name]
	if !ok {
		writeProblem(w, sessionNotFound(k.prefix+name))
		return
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, v); err != nil {
		writeProblem(w, problem(http.StatusInternalServerError, "invalid_config", "Invalid Config", "stored entry is not valid JSON"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(compact.Len()))
	_, _ = w.Write(compact.Bytes())
}

func (h *Handler) configPut(w http.ResponseWriter, r *http.Request, b agentbe.Backend, k configKind, dir, name string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, DefaultMaxConfigBytes+1))
	if err != nil || len(body) > DefaultMaxConfigBytes {
		writeProblem(w, tooLarge("config entry too large"))
		return
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
		writeProblem(w, problem(http.StatusUnprocessableEntity, "invalid_request", "Unprocessable Entity",
			"invalid JSON body: "+err.Error()))
		return
	}
	if err := k.validate(compact.Bytes()); err != nil {
		writeProblem(w, problem(http.StatusUnprocessableEntity, "invalid_request", "Unprocessable Entity", err.Error()))
		return
	}
	h.cfgMu.Lock()
	defer h.cfgMu.Unlock()
	m, err := readConfig(r.Context(), b, k, dir)
	if err == nil {
		m[name] = json.RawMessage(compact.Bytes())
		err = writeConfig(r.Context(), b, k, dir, m)
	}
	if err != nil {
		writeProblem(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// configDelete is idempotent: deleting a missing entry is 204, and a
// missing store is not created.
func (h *Handler) configDelete(w http.ResponseWriter, r *http.Request, b agentbe.Backend, k configKind, dir, name string) {
	h.cfgMu.Lock()
	defer h.cfgMu.Unlock()
	m, err := readConfig(r.Context(), b, k, dir)
	if err == nil {
		if _, ok := m[name]; ok {
			delete(m, name)
			err = writeConfig(r.Context(), b, k, dir, m)
		}
	}
	if err != nil {
		writeProblem(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// validateMCPEntry checks the shape of one McpServerConfig: a "local" (or
// "stdio") server needs a command, a "remote" (or "http") one a URL.
func validateMCPEntry(raw json.RawMessage) error {
	var e struct {
		Type    string            `json:"type"`
		Command *string           `json:"command"`
		Args    []string          `json:"args"`
		URL     *string           `json:"url"`
		Env     map[string]string `json:"env"`
		Headers map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return errors.New("invalid MCP server config: " + err.Error())
	}
	switch e.Type {
	case "local", "stdio":
		if e.Command == nil || *e.Command == "" {
			return errors.New("invalid MCP server config: a local server needs 'command'")
		}
	case "remote", "http":
		if e.URL == nil || *e.URL == "" {
			return errors.New("invalid MCP server config: a remote server needs 'url'")
		}
	default:
		return errors.New("invalid MCP server config: 'type' must be one of local, stdio, http, remote")
	}
	return nil
}

// validateSkillsEntry checks the shape of one SkillsConfig: {"sources":
// [{"type","source",…}]}.
func validateSkillsEntry(raw json.RawMessage) error {
	var e struct {
		Sources *[]struct {
			Type   string   `json:"type"`
			Source string   `json:"source"`
			Skills []string `json:"skills"`
		} `json:"sources"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return errors.New("invalid skills config: " + err.Error())
	}
	if e.Sources == nil {
		return errors.New("invalid skills config: 'sources' is required")
	}
	for i, s := range *e.Sources {
		if s.Type == "" || s.Source == "" {
			return errors.New("invalid skills config: sources[" + strconv.Itoa(i) + "] needs 'type' and 'source'")
		}
	}
	return nil
}
