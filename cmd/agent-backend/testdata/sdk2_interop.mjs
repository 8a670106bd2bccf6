// Drives the agentbe daemon with the official TypeScript client 2.x
// (@modelcontextprotocol/client, pinned in interop/package.json) in one
// negotiation mode: tools/list, a call of every tool, a large result and a
// cancelled exec (whose process must then be gone), asserting the
// negotiated protocol version; in the 2026 era, subscriptions/listen
// (and over HTTP, notifications/tasks for an exec task).
// Usage: MCP_CLIENT_DIR=DIR node sdk2_interop.mjs MODE WANT_VERSION ROOT (stdio BIN [flags...] | http URL TOKEN)
//   MODE: auto | legacy | pin
// Prints "SDK2-INTEROP-OK" and exits 0 when every check passed.
import { join } from 'node:path';
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';

// MCP_CLIENT_DIR: interop/node_modules/@modelcontextprotocol/client
const clientDir = process.env.MCP_CLIENT_DIR;
if (!clientDir) { console.error('MCP_CLIENT_DIR not set'); process.exit(2); }
const { Client, StreamableHTTPClientTransport } = await import(pathToFileURL(join(clientDir, 'dist/index.mjs')).href);
const { StdioClientTransport } = await import(pathToFileURL(join(clientDir, 'dist/stdio.mjs')).href);

const [mode, wantVersion, root, kind, ...rest] = process.argv.slice(2);
const fail = (msg, info) => { console.error('FAIL:', msg, info === undefined ? '' : JSON.stringify(info)); process.exit(1); };
const check = (cond, msg, info) => { if (!cond) fail(msg, info); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

fs.writeFileSync(join(root, 'hello.txt'), 'Hello\nWorld\n');
fs.rmSync(join(root, 'dir'), { recursive: true, force: true });
fs.mkdirSync(join(root, 'dir'), { recursive: true });
fs.writeFileSync(join(root, 'dir', 'a.md'), '# A\n');

const makeTransport = () => kind === 'stdio'
  ? new StdioClientTransport({ command: rest[0], args: ['daemon', '--rootDir', root, '--local-only', ...rest.slice(1)], stderr: 'inherit' })
  : new StreamableHTTPClientTransport(new URL(rest[0]), { requestInit: { headers: { Authorization: `Bearer ${rest[1]}` } } });
const versionNegotiation = mode === 'pin' ? { mode: { pin: '2026-07-28' } } : { mode };
const client = new Client({ name: 'sdk2-interop', version: '1.0.0' }, { versionNegotiation });
await client.connect(makeTransport());
check(client.getNegotiatedProtocolVersion() === wantVersion, 'negotiated version', client.getNegotiatedProtocolVersion());

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
check(names.length === 16 && names.includes('grep'), 'tool names', names);

const text = async (name, args, want) => {
  const r = await client.callTool({ name, arguments: args });
  check(!r.isError, `${name} isError`, r);
  const t = (r.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('');
  if (want !== undefined) check(t.includes(want), `${name} text`, t);
  return t;
};
await text('write_file', { path: 'w.txt', content: 'one\ntwo\n' }, 'Successfully wrote');
await text('read_text_file', { path: 'w.txt' }, 'one\ntwo\n');
await text('read_file', { path: 'w.txt', head: 1 }, 'one');
await text('read_multiple_files', { paths: ['w.txt', 'hello.txt'] }, 'World');
await text('edit_file', { path: 'w.txt', edits: [{ oldText: 'two', newText: 'three' }] }, '+three');
await text('create_directory', { path: 'dir/sub' }, 'Successfully created');
await text('list_directory', { path: '.' }, '[FILE] w.txt');
await text('list_directory_with_sizes', { path: '.' }, 'w.txt');
await text('directory_tree', { path: '.' }, '"name": "dir"');
await text('move_file', { source: 'w.txt', destination: 'dir/w.txt' }, 'Successfully moved');
await text('search_files', { path: '.', pattern: '**/*.md' }, 'a.md');
await text('get_file_info', { path: 'hello.txt' }, 'size:');
await text('list_allowed_directories', {}, 'Allowed directories');
await client.callTool({ name: 'read_media_file', arguments: { path: 'hello.txt' } });
await text('exec', { command: 'echo via-exec' }, 'via-exec');

// A large result: 3 MiB of text.
const big = '0123456789abcdef'.repeat((3 << 20) / 16);
fs.writeFileSync(join(root, 'big.txt'), big);
check((await text('read_text_file', { path: 'big.txt' })) === big, 'large read');

// A cancelled exec: its process must disappear.
const pidFile = join(root, `pid-${mode}`);
fs.rmSync(pidFile, { force: true });
const ac = new AbortController();
const call = client.callTool({ name: 'exec', arguments: { command: `echo $$ > pid-${mode}; exec sleep 60` } }, { signal: ac.signal })
  .then(() => 'resolved', (e) => `rejected: ${e}`);
let pid = 0;
for (let i = 0; i < 1500 && !pid; i++) {
  try { const s = fs.readFileSync(pidFile, 'utf8'); if (s.endsWith('\n')) pid = Number(s.trim()); } catch {}
  if (!pid) await sleep(20);
}
check(pid > 0, 'exec started');
ac.abort();
const outcome = await call;
check(outcome.startsWith('rejected'), 'cancelled call', outcome);
let gone = false;
for (let i = 0; i < 1500 && !gone; i++) {
  try { process.kill(pid, 0); const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8'); gone = st.includes(') Z '); } catch { gone = true; }
  if (!gone) await sleep(20);
}
check(gone, 'cancelled exec process gone', pid);

if (wantVersion === '2026-07-28') {
  // subscriptions/listen: the daemon declares no listChanged, so a listen
  // for tool-list changes is acknowledged with nothing honoured and ended
  // gracefully at once.
  const sub = await client.listen({ toolsListChanged: true });
  check(JSON.stringify(sub.honoredFilter) === '{}', 'listen: honoured filter', sub.honoredFilter);
  check((await sub.closed) === 'graceful', 'listen: ended gracefully');
  if (kind === 'http') {
    // notifications/tasks for a task of ours: the client cannot start a
    // task itself (it refuses resultType "task"), so a raw POST with the
    // same token starts one; a client declaring the tasks extension then
    // follows it on a listen until it ends.
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };
    const r = await fetch(rest[0], {
      method: 'POST',
      headers: { Authorization: `Bearer ${rest[1]}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'exec' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'exec', arguments: { command: 'sleep 2; echo listened' }, _meta: meta } }),
    });
    const created = (await r.json()).result;
    check(created?.resultType === 'task', 'exec as a task', created);
    const c2 = new Client({ name: 'sdk2-interop-tasks', version: '1.0.0' }, { versionNegotiation, capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } });
    const seen = [];
    c2.fallbackNotificationHandler = async (n) => { if (n.method === 'notifications/tasks') seen.push(n.params); };
    await c2.connect(makeTransport());
    const tsub = await c2.listen({ taskIds: [created.taskId, 'not-a-task'] });
    // (honoredFilter cannot show the taskIds: the client validates the
    // acknowledgement with a filter schema that knows only the core fields
    // and drops the rest; the notifications below show what was honoured.)
    check((await tsub.closed) === 'graceful', 'listen on a task: ended gracefully once it ended');
    const last = seen.at(-1);
    check(seen.length >= 2 && seen[0].status === 'working' && last?.status === 'completed' &&
      JSON.stringify(last.result).includes('listened'), 'notifications/tasks', seen);
    await c2.close();
  }
}
await client.close();
console.log('SDK2-INTEROP-OK');
