package mcp

import "sync"

// Response buffers are recycled between callTool, which encodes into them,
// and the transports, which hand them back once written (releaseResponse).
// A response a caller of Handle keeps is simply never handed back.
var respBufs sync.Pool // of *[]byte

// maxPooledResponse bounds the buffers kept for reuse, so one huge result
// does not stay pinned in memory.
const maxPooledResponse = 64 << 10

// responseBuffer returns an empty buffer with room for n bytes.
func responseBuffer(n int) []byte {
	if p, _ := respBufs.Get().(*[]byte); p != nil && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]byte, 0, n)
}

// releaseResponse hands b back for reuse; the caller must not touch it
// again.
func releaseResponse(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledResponse {
		return
	}
	respBufs.Put(&b)
}
