-- wrk script for bench/mcp-ceiling.sh http: the same read_text_file call on
-- every request, no per-response Lua work (the harness's lib/mcp.lua checks
-- every body, which makes wrk itself the limit near 30k req/s on 2 cores).
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"bench/read1k.txt"}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Authorization"] = "Bearer bench-token-of-32-bytes-or-more-0123456789"
