#!/usr/bin/env node
// fs-http.mjs — serves the official filesystem server (@modelcontextprotocol/server-filesystem 2.x)
// over Streamable HTTP with its own SDK's HTTP entry (createMcpHandler from
// @modelcontextprotocol/server): 2026-07-28 requests are served per request, 2025-era traffic by
// the SDK's stateless fallback. The filesystem package ships a stdio entry only; this puts the same
// tool definitions (its createServer factory) behind HTTP so the HTTP mode of capture.mjs and the
// conformance suite can be tried against the reference.
//
//   node fs-http.mjs --port 3003 --pkg /path/to/node_modules/@modelcontextprotocol/server-filesystem DIR...
//
// Listens on 127.0.0.1; the MCP endpoint is /mcp. Host and Origin are checked against localhost
// names (the SDK's localhostAllowedHostnames/localhostAllowedOrigins), as a local server should.
import http from 'node:http';
import path from 'node:path';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const argv = process.argv.slice(2);
let port = 3003; let pkg = null; const dirs = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--port') port = Number(argv[++i]);
  else if (argv[i] === '--pkg') pkg = path.resolve(argv[++i]);
  else dirs.push(argv[i]);
}
if (!pkg || dirs.length === 0) {
  console.error('usage: node fs-http.mjs [--port N] --pkg <node_modules/@modelcontextprotocol/server-filesystem> DIR...');
  process.exit(2);
}
const req = createRequire(path.join(pkg, 'package.json'));
// The ESM entry of the SDK the filesystem package itself imports (its CommonJS twin would be a
// second copy of the SDK, whose McpServer class the factory's instances do not belong to).
const sdkDir = path.dirname(path.dirname(req.resolve('@modelcontextprotocol/server')));
const sdkPkg = JSON.parse(fs.readFileSync(path.join(sdkDir, 'package.json'), 'utf8'));
const sdk = await import(pathToFileURL(path.join(sdkDir, sdkPkg.exports['.'].import.default)).href);
const { createServer } = await import(pathToFileURL(path.join(pkg, 'dist', 'server.js')).href);
const { resolveAllowedDirectories } = await import(pathToFileURL(path.join(pkg, 'dist', 'index.js')).href);
const version = JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8')).version;
const allowed = await resolveAllowedDirectories(dirs);

const handler = sdk.createMcpHandler(({ era }) => createServer(allowed, { era }), {
  onerror: (e) => console.error('mcp:', process.env.FS_HTTP_DEBUG ? e : (e?.message || e)),
});

const server = http.createServer(async (req, res) => {
  try {
    if (!req.url.startsWith('/mcp')) { res.writeHead(404).end(); return; }
    const chunks = []; for await (const c of req) chunks.push(c);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
    const ac = new AbortController();
    res.on('close', () => { if (!res.writableFinished) ac.abort(); }); // a closed response stream cancels
    const request = new Request(`http://${req.headers.host || '127.0.0.1'}${req.url}`, {
      method: req.method, headers, signal: ac.signal,
      ...(['GET', 'HEAD'].includes(req.method) ? {} : { body: Buffer.concat(chunks), duplex: 'half' }),
    });
    const rejected = sdk.hostHeaderValidationResponse(request, sdk.localhostAllowedHostnames())
      ?? sdk.originValidationResponse(request, sdk.localhostAllowedOrigins());
    const response = rejected ?? await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) for await (const chunk of response.body) res.write(chunk);
    res.end();
  } catch (e) {
    console.error('fs-http:', e);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
});
server.listen(port, '127.0.0.1', () => console.error(`server-filesystem ${version} on http://127.0.0.1:${server.address().port}/mcp, allowed: ${allowed.join(', ')}`));
