// Drives `agent-backend daemon --local-only` with the official MCP SDK client
// over stdio, asking for results larger than one message may carry: the
// SDK's stdio transport closes the connection on a message over 10 MiB, so
// each call must get a clear, bounded result and the next call must still
// be answered.
// Usage: MCP_SDK_DIR=<.../node_modules/@modelcontextprotocol/sdk> node sdk_large_results.mjs BIN ROOT [daemon flags...]
// Prints "LARGE-RESULTS-OK" and exits 0 when every check passed.
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import fs from 'node:fs';

const sdkDir = process.env.MCP_SDK_DIR;
if (!sdkDir) { console.error('MCP_SDK_DIR not set'); process.exit(2); }
const imp = (p) => import(pathToFileURL(join(sdkDir, 'dist/esm', p)).href);
const { Client } = await imp('client/index.js');
const { StdioClientTransport } = await imp('client/stdio.js');

const [bin, root, ...extra] = process.argv.slice(2);
const fail = (msg, info) => { console.error('FAIL:', msg, info === undefined ? '' : String(info).slice(0, 600)); process.exit(1); };
const check = (cond, msg, info) => { if (!cond) fail(msg, info); };

const MiB = 1 << 20;
// 64 MiB of 100-byte lines, and an image of the same size.
const line = 'x'.repeat(99) + '\n';
fs.writeFileSync(join(root, 'big.txt'), line.repeat((64 * MiB) / 100));
fs.writeFileSync(join(root, 'big.png'), Buffer.alloc(64 * MiB, 0x89));
fs.writeFileSync(join(root, 'small.txt'), 'small\n');

const transport = new StdioClientTransport({
  command: bin, args: ['daemon', '--rootDir', root, '--local-only', ...extra], stderr: 'inherit',
});
let closed = false;
transport.onclose = () => { closed = true; };
const client = new Client({ name: 'large-results', version: '1.0.0' });
client.onerror = (e) => console.error('client error:', e.message);
await client.connect(transport);

const call = async (label, name, args) => {
  let r;
  try {
    r = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
  } catch (e) {
    fail(`${label}: the call failed (connection closed: ${closed})`, e.message);
  }
  const text = r.content[0].text ?? '';
  console.log(`${label}: isError=${!!r.isError} ${text.length} chars: ${JSON.stringify(text.slice(0, 80))} … ${JSON.stringify(text.slice(-120))}`);
  return { text, isError: !!r.isError };
};
const alive = async (label) => {
  const r = await call(`after ${label}`, 'exec', { command: 'echo still here' });
  check(!r.isError && r.text === 'still here', `the next call after ${label} was not answered`, r.text);
};

// A command printing 200 MB: its first part, with a note giving the size.
let r = await call('exec 200 MB', 'exec', { command: 'yes 0123456789abcdef | head -c 200000000' });
check(!r.isError, 'exec 200 MB isError');
check(r.text.startsWith('0123456789abcdef\n0123456789abcdef'), 'exec 200 MB output', r.text.slice(0, 100));
const note = /\n\n\.\.\. \[Output truncated\. Full output was 200000000 bytes, showing first (\d+)\]$/.exec(r.text);
check(note && Number(note[1]) === r.text.length - note[0].length, 'exec 200 MB note', r.text.slice(-200));
check(Buffer.byteLength(r.text) <= 2 * MiB, 'exec 200 MB result size', Buffer.byteLength(r.text));
await alive('exec 200 MB');

// The worst case for JSON escaping: control bytes, six bytes each.
r = await call('exec 20 MB of control bytes', 'exec', { command: "head -c 20000000 /dev/zero | tr '\\0' '\\1'; exit 4" });
check(r.isError && r.text.startsWith('Command execution failed with exit code 4: \u0001'), 'control bytes: failure with stdout', r.text.slice(0, 100));
check(r.text.includes('Full output was 20000000 bytes'), 'control bytes note', r.text.slice(-200));
await alive('exec of control bytes');

// A 64 MiB text file: a clear error naming the limit and head/tail.
r = await call('read_text_file 64 MiB', 'read_text_file', { path: 'big.txt' });
check(r.isError && r.text.startsWith('File too large: read_text_file returns at most ') && r.text.includes('head or tail'),
  'read_text_file 64 MiB error', r.text);
await alive('read_text_file 64 MiB');
r = await call('read_text_file head', 'read_text_file', { path: 'big.txt', head: 2 });
check(!r.isError && r.text === line + line.slice(0, -1), 'read_text_file head 2', r.text);
r = await call('read_text_file tail', 'read_text_file', { path: 'big.txt', tail: 10000 });
check(!r.isError && r.text.length > 990000 && r.text.length <= 1000000 && r.text.startsWith(line), 'read_text_file tail 10000', r.text.length);

r = await call('read_file 64 MiB', 'read_file', { path: 'big.txt' });
check(r.isError && r.text.includes('head or tail'), 'read_file 64 MiB error', r.text);
r = await call('read_multiple_files', 'read_multiple_files', { paths: ['small.txt', 'big.txt'] });
check(!r.isError && r.text.startsWith('small.txt:\nsmall\n') && r.text.includes('big.txt: Error - File too large'),
  'read_multiple_files', r.text);
r = await call('read_media_file 64 MiB', 'read_media_file', { path: 'big.png' });
check(r.isError && r.text.startsWith('File too large: read_media_file returns files of at most '), 'read_media_file error', r.text);
await alive('the reads');

r = await call('list_allowed_directories', 'list_allowed_directories', {});
check(r.text === `Allowed directories:\n${root}`, 'list_allowed_directories', r.text);
check(!closed, 'the connection closed');
await client.close();
console.log('LARGE-RESULTS-OK');
