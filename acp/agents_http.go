package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// agentInfo is sandbox-agent's AgentInfo object. The install path is not
// reported (it is a host path); serverStatus reflects this proxy's
// instances of the agent in the request's scope.
type agentInfo struct {
	ID                   string        `json:"id"`
	Installed            bool          `json:"installed"`
	CredentialsAvailable bool          `json:"credentialsAvailable"`
	Capabilities         Capabilities  `json:"capabilities"`
	ServerStatus         *serverStatus `json:"serverStatus,omitempty"`
}

type serverStatus struct {
	Status   string `json:"status"` // "running" or "stopped"
	UptimeMs int64  `json:"uptimeMs,omitempty"`
}

// info describes a; servers is the proxy's listing, from which the
// agent's serverStatus comes ("running" when one of its instances is).
func (h *Handler) info(ctx context.Context, b agentbe.Backend, a Agent, servers []InstanceInfo) agentInfo {
	info := agentInfo{ID: a.ID, Installed: agentInstalled(ctx, b, a), Capabilities: a.Capabilities,
		CredentialsAvailable: len(a.HostEnv) == 0}
	for _, k := range a.HostEnv {
		if _, ok := os.LookupEnv(k); ok && !slices.Contains(h.proxy.cfg.SecretEnv, k) {
			info.CredentialsAvailable = true
		}
	}
	for _, in := range servers {
		if in.Agent != a.ID {
			continue
		}
		if in.Status == "running" {
			info.ServerStatus = &serverStatus{Status: "running", UptimeMs: in.UptimeMs}
		} else if info.ServerStatus == nil {
			info.ServerStatus = &serverStatus{Status: "stopped"}
		}
	}
	return info
}

// agentList answers GET /v1/agents.
func (h *Handler) agentList(w http.ResponseWriter, r *http.Request) {
	b, release, ok := h.backend(w, r)
	if !ok {
		return
	}
	defer release()
	servers := h.visible(r, b)
	agents := []agentInfo{}
	for _, a := range h.agents.List() {
		agents = append(agents, h.info(r.Context(), b, a, servers))
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": agents})
}

// agentGet answers GET /v1/agents/{agent}.
func (h *Handler) agentGet(w http.ResponseWriter, r *http.Request) {
	a, known := h.agents.Get(r.PathValue("agent"))
	if !known {
		writeProblem(w, unsupportedAgent(http.StatusNotFound, r.PathValue("agent")))
		return
	}
	b, release, ok := h.backend(w, r)
	if !ok {
		return
	}
	defer release()
	writeJSON(w, http.StatusOK, h.info(r.Context(), b, a, h.visible(r, b)))
}

// installRequest is sandbox-agent's AgentInstallRequest; the versions are
// accepted and ignored (an agent's install command pins what it installs).
type installRequest struct {
	Reinstall           *bool   `json:"reinstall"`
	AgentVersion        *string `json:"agentVersion"`
	AgentProcessVersion *string `json:"agentProcessVersion"`
}

type installArtifact struct {
	Kind    string `json:"kind"`
	Path    string `json:"path"`
	Source  string `json:"source"`
	Version string `json:"version,omitempty"`
}

// agentInstall answers POST /v1/agents/{agent}/install: it runs the agent's
// install command through the request's backend (its isolation and clean
// environment), bounded by ProxyConfig.InstallTimeout.
func (h *Handler) agentInstall(w http.ResponseWriter, r *http.Request) {
	a, known := h.agents.Get(r.PathValue("agent"))
	if !known {
		writeProblem(w, unsupportedAgent(http.StatusNotFound, r.PathValue("agent")))
		return
	}
	var req installRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil && !errors.Is(err, io.EOF) {
		writeProblem(w, badRequest("invalid JSON body: "+err.Error()))
		return
	}
	b, release, ok := h.backend(w, r)
	if !ok {
		return
	}
	defer release()
	reinstall := req.Reinstall != nil && *req.Reinstall
	artifacts := []installArtifact{}
	if a.Check != "" {
		artifacts = append(artifacts, installArtifact{Kind: "agent_process", Path: a.Check, Source: "install_command"})
	}
	if a.Install == "" || (!reinstall && agentInstalled(r.Context(), b, a)) {
		writeJSON(w, http.StatusOK, map[string]any{"already_installed": true, "artifacts": artifacts})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.proxy.cfg.installTimeout())
	defer cancel()
	start := time.Now()
	stderr := newTailBuffer(4 << 10)
	_, err := b.Exec(ctx, a.Install, agentbe.ExecOptions{Env: agentEnv(a, h.proxy.cfg.SecretEnv), Stdout: io.Discard, Stderr: stderr})
	if err != nil {
		h.logger().WarnContext(r.Context(), "acp: agent install failed", "agent", a.ID, "took", time.Since(start), "stderr", stderr.String())
		p := streamError(http.StatusBadGateway, "install command for agent "+a.ID+" failed: "+execSummary(err))
		p.Extra["details"] = map[string]string{"message": p.Detail, "stderr": stderr.String()}
		writeProblem(w, p)
		return
	}
	if a.Check != "" && !agentInstalled(r.Context(), b, a) {
		writeProblem(w, streamError(http.StatusBadGateway, "install command for agent "+a.ID+" did not create "+a.Check))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"already_installed": false, "artifacts": artifacts})
}
