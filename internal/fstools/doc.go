// Package fstools is the workspace's MCP tools: the 14 tools of the
// official MCP filesystem server (read_file, read_text_file, … ,
// list_allowed_directories) with its input schemas, result texts and error
// texts, and the exec tool of the TypeScript agent-backend daemon. They
// run on a Workspace (any agentbe backend) through mcp.NewServer
// (Tools, Handler); agentbe.NewMCPServer wires them to a backend.
//
// Every path is checked as the official server checks it (the workspace
// root is the only allowed directory, links are resolved inside it), names
// in another Unicode normal form are matched the way macOS file systems
// match them, listings are ordered by ICU's root collation as JavaScript's
// localeCompare orders them, and every tool is bounded in time and memory
// (Handler). The optional extensions of a Workspace are fast paths behind
// the same checks.
package fstools
