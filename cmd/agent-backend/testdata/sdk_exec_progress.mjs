// The official MCP SDK client (1.x) calls exec with a request timeout
// shorter than the command: with onprogress and resetTimeoutOnProgress the
// progress notifications exec sends keep the request alive until the
// command's result arrives; without them the request times out.
// Usage: MCP_SDK_DIR=<.../node_modules/@modelcontextprotocol/sdk> node sdk_exec_progress.mjs --stdio BIN ROOT [daemon flags...]
//        MCP_SDK_DIR=... node sdk_exec_progress.mjs --http URL TOKEN
// Prints "EXEC-PROGRESS-OK" and exits 0 when every check passed.
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';

const sdkDir = process.env.MCP_SDK_DIR;
if (!sdkDir) { console.error('MCP_SDK_DIR not set'); process.exit(2); }
const imp = (p) => import(pathToFileURL(join(sdkDir, 'dist/esm', p)).href);
const { Client } = await imp('client/index.js');
const fail = (msg, info) => { console.error('FAIL:', msg, info === undefined ? '' : JSON.stringify(info)); process.exit(1); };
const check = (cond, msg, info) => { if (!cond) fail(msg, info); };

const [mode, ...rest] = process.argv.slice(2);
let transport;
if (mode === '--stdio') {
  const { StdioClientTransport } = await imp('client/stdio.js');
  const [bin, root, ...extra] = rest;
  transport = new StdioClientTransport({ command: bin, args: ['daemon', '--rootDir', root, '--local-only', ...extra], stderr: 'inherit' });
} else if (mode === '--http') {
  const { StreamableHTTPClientTransport } = await imp('client/streamableHttp.js');
  const [url, token] = rest;
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
} else {
  fail('usage: --stdio BIN ROOT | --http URL TOKEN');
}
const client = new Client({ name: 'exec-progress', version: '1.0.0' });
await client.connect(transport);

// The request timeout (2 s) is shorter than the command (4 s); progress
// comes every second.
const command = { name: 'exec', arguments: { command: 'echo started; sleep 4; echo done' } };
const timeout = 2000;

const progress = [];
const r = await client.callTool(command, undefined, {
  timeout, resetTimeoutOnProgress: true, onprogress: (p) => progress.push(p),
});
check(!r.isError && r.content[0].text === 'started\ndone', 'result through progress', r);
check(progress.length >= 2, 'at least two progress notifications', progress);
for (let i = 0; i < progress.length; i++) {
  check(progress[i].progress === i + 1, 'progress counts up', progress);
  check(/^\d+ bytes of output so far$/.test(progress[i].message), 'progress message', progress[i]);
}
check(progress.some((p) => p.message === '8 bytes of output so far'), 'the output so far is counted', progress);
console.log(`with progress: ${progress.length} notifications, result ${JSON.stringify(r.content[0].text)}`);

// Without progress the same call times out.
let timedOut = null;
try {
  await client.callTool(command, undefined, { timeout });
} catch (e) {
  timedOut = e;
}
check(timedOut && timedOut.code === -32001, 'without progress the call times out', timedOut && { code: timedOut.code, message: timedOut.message });
console.log(`without progress: ${timedOut.message}`);

// The connection still serves calls.
const again = await client.callTool({ name: 'exec', arguments: { command: 'echo still here' } });
check(again.content[0].text === 'still here', 'next call', again);
await client.close();
console.log('EXEC-PROGRESS-OK');
