// Package gosdk drives an MCP server with the official MCP Go SDK
// (github.com/modelcontextprotocol/go-sdk) as the peer client of the interop
// tests: it connects over stdio or Streamable HTTP, lists the tools, calls
// one and reports the protocol version the SDK negotiated.
//
// It is a module of its own so that the library's go.mod does not depend on
// the SDK. The SDK's client tries protocol revision 2026-07-28 first
// (server/discover) and silently falls back to a 2025 initialize handshake
// when discovery fails, so a test that means the 2026 era must assert
// [Report.ProtocolVersion] rather than trust that the call worked.
package gosdk
