// Package acp serves the Agent Client Protocol proxy and the HTTP file API
// of the agentbe daemon, wire-compatible with sandbox-agent 0.4.2's
// TypeScript SDK (see docs/acp-proxy.md):
//
//	GET  /                                  service banner
//	GET  /v1/health                         {"status":"ok"}
//	GET  /v1/acp                            running ACP instances
//	POST|GET|DELETE /v1/acp/{server_id}     JSON-RPC over HTTP + SSE <-> agent stdio
//	GET  /v1/agents[/{agent}]               agent registry with install/runtime status
//	POST /v1/agents/{agent}/install         run the agent's install command
//	/v1/fs/entries|file|entry|mkdir|move|stat|upload-batch
//	/v1/config/mcp, /v1/config/skills       per-directory config entries
//
// The proxy core (Proxy, Instance, Ring) knows nothing of HTTP; NewHandler
// adds the transport. Every file access goes through the agentbe.Backend
// that Config.Resolve returns for the request, so the workspace jail
// (os.Root) and the request's scope apply to every path, and every agent
// process is started through that backend's Exec: the same isolation mode,
// the same clean environment (never the daemon's own variables or token),
// plus the host variables the agent declares in the registry.
//
// Intentional differences from sandbox-agent 0.4.2 (golden_test.go checks
// each one against the real binary):
//
//   - Paths are workspace paths: relative to the backend root, absolute
//     paths under it as they are, and any other absolute path is relative to
//     it; nothing leaves the root (sandbox-agent resolves against $HOME and
//     reads any absolute host path). Responses report absolute paths inside
//     the root.
//   - DELETE /v1/fs/entry refuses the root (403); sandbox-agent deletes it.
//   - Statuses: missing path 404 (not 400), ".." leaving the root 403,
//     non-empty directory 409 (not 502), wrong upload content type 415 (not
//     400); config validation errors are problem+json (not text/plain).
//   - File bodies stream both ways with a configurable limit
//     (Config.MaxFileBytes, default 1 GiB) instead of a 2 MiB PUT cap and
//     whole-file buffering; GET honours Range.
//   - upload-batch refuses symbolic links, hard links, devices and FIFOs and
//     applies nothing of an archive with one bad member.
//   - ACP: agent output is forwarded byte for byte (sandbox-agent
//     re-encodes it); 504 after ProxyConfig.RequestTimeout; DELETE answers
//     within ProxyConfig.StopWait (sandbox-agent's never answers); GET
//     /v1/acp/{id} waits Config.AttachWait for an instance being created;
//     an evicted Last-Event-ID gets an "event: gap" first; GET /v1/acp adds
//     status, uptimeMs and error to each server.
//
// Authentication is not done here: the handler assumes that every request
// reaching it was authenticated by the daemon (Bearer token on /v1/*), and
// Config.Resolve is where the daemon applies the request's scope.
package acp
