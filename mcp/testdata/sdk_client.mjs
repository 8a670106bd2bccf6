// Drives an MCP server with the official TypeScript SDK client and checks
// the protocol behaviour the Go tests rely on. Usage:
//   MCP_SDK_DIR=<.../node_modules/@modelcontextprotocol/sdk> node sdk_client.mjs --stdio CMD [ARGS...]
//   MCP_SDK_DIR=... node sdk_client.mjs --http URL
// Prints "SDK-INTEROP-OK" and exits 0 when every check passed.
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';

const sdkDir = process.env.MCP_SDK_DIR;
if (!sdkDir) { console.error('MCP_SDK_DIR not set'); process.exit(2); }
const imp = (p) => import(pathToFileURL(join(sdkDir, 'dist/esm', p)).href);
const { Client } = await imp('client/index.js');

const [mode, ...rest] = process.argv.slice(2);
let transport;
if (mode === '--stdio') {
  const { StdioClientTransport } = await imp('client/stdio.js');
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: 'inherit' });
} else if (mode === '--http') {
  const { StreamableHTTPClientTransport } = await imp('client/streamableHttp.js');
  transport = new StreamableHTTPClientTransport(new URL(rest[0]));
} else {
  console.error('usage: --stdio CMD... | --http URL'); process.exit(2);
}

const fail = (msg, extra) => { console.error('FAIL:', msg, extra === undefined ? '' : JSON.stringify(extra)); process.exit(1); };
const check = (cond, msg, extra) => { if (!cond) fail(msg, extra); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const client = new Client({ name: 'sdk-interop', version: '1.0.0' });
await client.connect(transport);
const sv = client.getServerVersion();
check(sv && sv.name === 'agentbe-testserver', 'serverInfo', sv);
check(JSON.stringify(client.getServerCapabilities()) === '{"tools":{"listChanged":true}}', 'capabilities', client.getServerCapabilities());

await client.ping();

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).join(',');
check(names === 'echo,slow,stats,panic,fail', 'tool names', names);

const echo = await client.callTool({ name: 'echo', arguments: { text: 'héllo "world"\n' } });
check(!echo.isError && echo.content[0].text === 'héllo "world"\n', 'echo', echo);
check(echo.structuredContent && echo.structuredContent.content === 'héllo "world"\n', 'echo structuredContent', echo);

const unknown = await client.callTool({ name: 'nope', arguments: {} });
check(unknown.isError === true && unknown.content[0].text === 'MCP error -32602: Tool nope not found', 'unknown tool', unknown);

const panicked = await client.callTool({ name: 'panic', arguments: {} });
check(panicked.isError === true && /panicked/.test(panicked.content[0].text), 'panic', panicked);

const failed = await client.callTool({ name: 'fail', arguments: {} });
check(failed.isError === true && failed.content[0].text === 'it failed', 'fail', failed);

// Methods the server lacks are JSON-RPC -32601.
try {
  await client.listResources();
  fail('resources/list succeeded');
} catch (e) {
  check(e.code === -32601, 'resources/list code', { code: e.code, message: e.message });
}

// Concurrent calls all come back.
const many = await Promise.all(Array.from({ length: 20 }, (_, i) => client.callTool({ name: 'echo', arguments: { text: 'n' + i } })));
many.forEach((r, i) => check(r.content[0].text === 'n' + i, 'concurrent echo ' + i, r));

// Cancellation: abort a running slow call; the server tool's ctx must be cancelled.
const stats = async () => JSON.parse((await client.callTool({ name: 'stats', arguments: {} })).content[0].text);
const before = await stats();
const ac = new AbortController();
const slow = client.callTool({ name: 'slow', arguments: {} }, undefined, { signal: ac.signal, timeout: 60000 });
for (let i = 0; (await stats()).started === before.started; i++) {
  if (i > 200) fail('slow tool never started');
  await sleep(25);
}
ac.abort('test abort');
let aborted = false;
try { await slow; } catch (e) { aborted = true; }
check(aborted, 'aborted call should reject');
for (let i = 0; ; i++) {
  const s = await stats();
  if (s.cancelled > before.cancelled) break;
  if (i > 400) fail('tool context was not cancelled', s);
  await sleep(25);
}

// Still usable after the cancellation.
const again = await client.callTool({ name: 'echo', arguments: { text: 'after' } });
check(again.content[0].text === 'after', 'echo after cancel', again);

await client.close();
console.log('SDK-INTEROP-OK');
