// The unmodified TypeScript client (agent-backend@0.13.2) against our daemon.
// Run by cmd/agent-backend's TestTypeScriptClientAgainstDaemon with
// AGENTBE_HOST, AGENTBE_PORT, AGENTBE_TOKEN, AGENTBE_ROOT and
// AGENTBE_ISOLATION (the daemon's --isolation) set:
//   node --test ts-client.test.mjs
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { RemoteFilesystemBackend } from 'agent-backend';

const { AGENTBE_HOST: host, AGENTBE_PORT: port, AGENTBE_TOKEN: token, AGENTBE_ROOT: rootDir, AGENTBE_ISOLATION: isolation } = process.env;
const backend = new RemoteFilesystemBackend({ rootDir, host, port: Number(port), authToken: token });
after(async () => { await backend.destroy(); });

test('file operations', async () => {
  await backend.write('ts/a.txt', 'hello from ts');
  assert.equal(await backend.read('ts/a.txt'), 'hello from ts');
  await backend.mkdir('ts/dir/sub', { recursive: true });
  assert.equal(await backend.exists('ts/dir/sub'), true);
  assert.equal(await backend.exists('ts/missing'), false);
  const names = await backend.readdir('ts');
  assert.deepEqual(names.sort(), ['a.txt', 'dir']);
  const st = await backend.stat('ts/a.txt');
  assert.equal(st.size, 13);
  assert.equal(st.isFile(), true);
  await backend.rename('ts/a.txt', 'ts/b.txt');
  assert.equal(await backend.exists('ts/a.txt'), false);
  await backend.touch('ts/t.txt');
  assert.equal(await backend.exists('ts/t.txt'), true);
  await backend.rm('ts/dir', { recursive: true });
  assert.equal(await backend.exists('ts/dir'), false);
});

test('binary files stay intact', async () => {
  const bin = Buffer.alloc(200000);
  for (let i = 0; i < bin.length; i++) bin[i] = (i * 131 + 7) & 0xff;
  await backend.write('ts/bin.dat', bin);
  const back = await backend.read('ts/bin.dat', { encoding: 'buffer' });
  assert.equal(Buffer.compare(back, bin), 0);
});

test('exec with env, HOME and cwd', async () => {
  await backend.mkdir('ts/work', { recursive: true });
  const out = await backend.exec('echo "$GREETING"; printenv HOME; pwd', { cwd: 'ts/work', env: { GREETING: "hi 'there'" } });
  const [greet, home, pwd] = String(out).trim().split('\n');
  assert.equal(greet, "hi 'there'");
  assert.equal(home, pwd, 'HOME is the working directory');
  // The client's cwd is the command's boundary: under bwrap it is what is
  // mounted at the workspace path.
  assert.match(pwd, isolation === 'bwrap' ? /^\/tmp\/agentbe-workspace$/ : /ts\/work$/);
  // HOME is a directory the command can enter.
  const entered = await backend.exec('printenv HOME | xargs test -d && echo yes', { cwd: 'ts/work' });
  assert.equal(String(entered).trim(), 'yes');
  await assert.rejects(backend.exec('exit 3'));
});

// Under bwrap the kernel keeps commands in the workspace (the client's cwd,
// which the daemon takes as the command's boundary), so changing directory,
// $HOME and ".." work inside it; where nothing confines them (software,
// none) the daemon refuses them as workspace escapes.
test('agents can cd where the kernel confines them', async () => {
  await backend.mkdir('ts/src', { recursive: true });
  await backend.write('ts/src/f.txt', 'in src');
  const commands = ['(cd "$HOME" && pwd -P)', 'cd src && cat f.txt', 'cat ../ts/src/f.txt'];
  if (isolation !== 'bwrap') {
    for (const c of commands) {
      await assert.rejects(backend.exec(c, { cwd: 'ts' }), /directory change|parent directory traversal/, c);
    }
    return;
  }
  // The check agents run to learn where they are.
  const home = String(await backend.exec('(cd "$HOME" && pwd -P)')).trim();
  assert.equal(home, String(await backend.exec('pwd -P')).trim());
  assert.equal(String(await backend.exec('cd src && cat f.txt', { cwd: 'ts' })).trim(), 'in src');
  assert.equal(String(await backend.exec('cd src && cat ../src/f.txt', { cwd: 'ts' })).trim(), 'in src');
  assert.equal(String(await backend.exec('cd src && cd "$HOME" && cd src/.. && ls -d src', { cwd: 'ts' })).trim(), 'src');
  // Nothing above the cwd is visible: it is the boundary.
  await assert.rejects(backend.exec('cat ../ts/src/f.txt', { cwd: 'ts' }));
  // The dangerous class still applies.
  await assert.rejects(backend.exec('cd src && sudo ls', { cwd: 'ts' }));
});

test('scoped backend', async () => {
  const scoped = backend.scope('users/alice');
  await scoped.write('notes.txt', 'scoped');
  assert.equal(await backend.read('users/alice/notes.txt'), 'scoped');
  const out = await scoped.exec('pwd');
  assert.match(String(out).trim(), isolation === 'bwrap' ? /^\/tmp\/agentbe-workspace$/ : /users\/alice$/);
  await assert.rejects(scoped.read('../../etc/passwd'));
});

// A scoped backend's commands see only the scope: the daemon runs the
// command confined to the directory of the client's cd prefix. Under bwrap
// the scope is all there is at the workspace path; in software mode an
// absolute path outside the scope is refused; none confines nothing.
test('a scoped backend sees only its scope', { skip: isolation === 'none' }, async () => {
  const canary = 'bob-s3cret-canary-of-the-ts-test';
  await backend.write('users/bob/secret.txt', canary);
  const scoped = backend.scope('users/alice');
  await scoped.write('mine.txt', 'mine');
  const attempts = [`cat ${rootDir}/users/bob/secret.txt`];
  if (isolation === 'bwrap') attempts.push('cat /tmp/agentbe-workspace/users/bob/secret.txt', 'cat ../bob/secret.txt');
  for (const c of attempts) {
    const out = await scoped.exec(c).then(String, (e) => String(e));
    assert.ok(!out.includes(canary), `${c}: ${out}`);
  }
  if (isolation === 'bwrap') {
    const ls = String(await scoped.exec('ls -A /tmp/agentbe-workspace')).trim().split('\n').sort();
    assert.deepEqual(ls, (await scoped.readdir('.')).sort());
    assert.ok(!ls.includes('users') && ls.includes('mine.txt'), ls.join(','));
  }
});

test('MCP client lists and calls tools', async () => {
  const client = await backend.getMCPClient();
  try {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    assert.ok(names.includes('read_text_file'), names.join(','));
    assert.ok(names.includes('exec'), names.join(','));
    const res = await client.callTool({ name: 'read_text_file', arguments: { path: 'ts/b.txt' } });
    assert.equal(res.content[0].text, 'hello from ts');
  } finally {
    await client.close();
  }
  const scopedClient = await backend.getMCPClient('users/alice');
  try {
    const res = await scopedClient.callTool({ name: 'read_text_file', arguments: { path: 'notes.txt' } });
    assert.equal(res.content[0].text, 'scoped');
  } finally {
    await scopedClient.close();
  }
});
