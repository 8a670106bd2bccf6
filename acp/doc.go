// Package acp serves the Agent Client Protocol proxy and the HTTP file API
// of the agentbe daemon, wire-compatible with sandbox-agent 0.4.2's
// TypeScript SDK (see ../shared/spec/acp-proxy.md):
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
// Authentication is not done here: the handler assumes that every request
// reaching it was authenticated by the daemon (Bearer token on /v1/*), and
// Config.Resolve is where the daemon applies the request's scope.
package acp
