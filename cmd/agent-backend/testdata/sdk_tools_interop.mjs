// Drives `agent-backend daemon --local-only` with the official MCP SDK client
// over stdio: initialize, tools/list, a call of every tool, and the
// cancellation of a long exec (whose process must then be gone).
// Usage: MCP_SDK_DIR=<.../node_modules/@modelcontextprotocol/sdk> node sdk_tools_interop.mjs BIN ROOT [daemon flags...]
// Prints "TOOLS-INTEROP-OK" and exits 0 when every check passed.
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import fs from 'node:fs';

const sdkDir = process.env.MCP_SDK_DIR;
if (!sdkDir) { console.error('MCP_SDK_DIR not set'); process.exit(2); }
const imp = (p) => import(pathToFileURL(join(sdkDir, 'dist/esm', p)).href);
const { Client } = await imp('client/index.js');
const { StdioClientTransport } = await imp('client/stdio.js');

const [bin, root, ...extra] = process.argv.slice(2);
const fail = (msg, extraInfo) => { console.error('FAIL:', msg, extraInfo === undefined ? '' : JSON.stringify(extraInfo)); process.exit(1); };
const check = (cond, msg, extraInfo) => { if (!cond) fail(msg, extraInfo); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

fs.writeFileSync(join(root, 'hello.txt'), 'Hello\nWorld\n');
fs.mkdirSync(join(root, 'dir'), { recursive: true });
fs.writeFileSync(join(root, 'dir', 'a.md'), '# A\n');

const transport = new StdioClientTransport({
  command: bin, args: ['daemon', '--rootDir', root, '--local-only', ...extra], stderr: 'inherit',
});
const client = new Client({ name: 'tools-interop', version: '1.0.0' });
await client.connect(transport);
check(client.getServerCapabilities()?.tools, 'tools capability', client.getServerCapabilities());

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
const want = ['create_directory', 'directory_tree', 'edit_file', 'exec', 'get_file_info', 'grep', 'list_allowed_directories', 'list_directory',
  'list_directory_with_sizes', 'move_file', 'read_file', 'read_media_file', 'read_multiple_files', 'read_text_file', 'search_files', 'write_file'];
check(JSON.stringify(names) === JSON.stringify(want), 'tool names', names);

const text = async (name, args, wantError = false) => {
  const r = await client.callTool({ name, arguments: args });
  check(!!r.isError === wantError, `${name} isError`, r);
  return r.content[0].text;
};
check(await text('read_text_file', { path: 'hello.txt' }) === 'Hello\nWorld\n', 'read_text_file');
check(await text('read_file', { path: 'hello.txt', head: 1 }) === 'Hello', 'read_file head');
const media = await client.callTool({ name: 'read_media_file', arguments: { path: 'hello.txt' } });
check(media.content[0].type === 'resource' && Buffer.from(media.content[0].resource.blob, 'base64').toString() === 'Hello\nWorld\n', 'read_media_file', media);
check((await text('read_multiple_files', { paths: ['hello.txt', 'nope'] })).includes('nope: Error - ENOENT'), 'read_multiple_files');
check(await text('write_file', { path: 'new.txt', content: 'one\ntwo\n' }) === 'Successfully wrote to new.txt', 'write_file');
check((await text('edit_file', { path: 'new.txt', edits: [{ oldText: 'two', newText: 'TWO' }] })).includes('+TWO'), 'edit_file');
check(fs.readFileSync(join(root, 'new.txt'), 'utf8') === 'one\nTWO\n', 'edit_file wrote');
check(await text('create_directory', { path: 'made/deep' }) === 'Successfully created directory made/deep', 'create_directory');
check(await text('list_directory', { path: '.' }) === '[DIR] dir\n[FILE] hello.txt\n[DIR] made\n[FILE] new.txt', 'list_directory');
check((await text('list_directory_with_sizes', { path: '.', sortBy: 'size' })).includes('Total: 2 files, 2 directories'), 'list_directory_with_sizes');
check(JSON.parse(await text('directory_tree', { path: 'dir' }))[0].name === 'a.md', 'directory_tree');
check(await text('search_files', { path: '.', pattern: '**/*.md' }) === join(root, 'dir/a.md'), 'search_files');
check((await text('get_file_info', { path: 'hello.txt' })).startsWith('size: 12\n'), 'get_file_info');
check(await text('move_file', { source: 'new.txt', destination: 'made/new.txt' }) === 'Successfully moved new.txt to made/new.txt', 'move_file');
check(await text('list_allowed_directories', {}) === `Allowed directories:\n${root}`, 'list_allowed_directories');
check((await text('read_text_file', { path: '../escape' }, true)).startsWith('Access denied'), 'escape denied');
check(await text('exec', { command: 'echo "  $GREETING"; cat hello.txt', env: { GREETING: 'hi' } }) === 'hi\nHello\nWorld', 'exec');
check((await text('exec', { command: 'echo oops >&2; exit 3' }, true)) === 'Command execution failed with exit code 3: oops', 'exec failure');

// Cancel a long command: the request rejects and the process goes away.
const token = `30.${process.pid % 1000}7`;
const running = () => fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).some((pid) => {
  try { return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(token); } catch { return false; }
});
const ac = new AbortController();
const call = client.callTool({ name: 'exec', arguments: { command: `sleep ${token}` } }, undefined, { signal: ac.signal, timeout: 60000 });
let seen = false;
for (let i = 0; i < 100 && !seen; i++) { await sleep(50); seen = running(); }
check(seen, 'the sleep process never started');
ac.abort();
let rejected = false;
try { await call; } catch { rejected = true; }
check(rejected, 'cancelled call did not reject');
let gone = false;
for (let i = 0; i < 100 && !gone; i++) { await sleep(50); gone = !running(); }
check(gone, 'the cancelled command is still running');
// The server still answers after a cancellation.
check(await text('read_text_file', { path: 'hello.txt', tail: 1 }) === '', 'alive after cancel');

await client.close();
console.log('TOOLS-INTEROP-OK');
