package mcp

// DefaultMaxMessageBytes is the size of the largest JSON-RPC message a
// Server sends when ServerOptions.MaxMessageBytes is zero: 8 MiB. The
// official TypeScript SDK's stdio transport (what most MCP hosts embed)
// closes the whole connection once it buffers more than 10 MiB of one
// message, counting the pipe chunk it is reading (up to 64 KiB), and every
// later call then fails; 8 MiB stays clear of that.
const DefaultMaxMessageBytes = 8 << 20

// minMessageBytes is the smallest message limit a Server accepts; a lower
// ServerOptions.MaxMessageBytes is raised to it.
const minMessageBytes = 64 << 10

// MessageLimit returns the size of the largest message a Server with
// these options sends: MaxMessageBytes, or DefaultMaxMessageBytes when it
// is zero, and never less than 64 KiB. Tools size their results by it, so
// that the Server need not replace them.
func (o ServerOptions) MessageLimit() int {
	if o.MaxMessageBytes > 0 {
		return max(o.MaxMessageBytes, minMessageBytes)
	}
	return DefaultMaxMessageBytes
}
