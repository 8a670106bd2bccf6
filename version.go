package agentbe

// Version is the agentbe version: what MCP clients see as the server's
// version and what the daemon reports on /health and the CLI's version
// command prints (beside the module version and VCS revision the Go
// toolchain records in the binary).
const Version = "0.1.0"
