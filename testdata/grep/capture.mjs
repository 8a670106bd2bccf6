#!/usr/bin/env node
// Captures what the TypeScript reference's `grep` MCP tool (agent-backend
// 0.13.2, which shells out to ripgrep) answers for every case of corpus.mjs,
// and writes reference.json. See README.md.
//
//   node testdata/grep/capture.mjs [--out FILE] [--modules DIR] [--keep] [--only REGEX]
//
// --modules  a node_modules directory holding agent-backend@0.13.2 and
//            @modelcontextprotocol/sdk (default: $AGENTBE_INTEROP_MODULES, else
//            interop/node_modules of this repository)
// --out      default: reference.json next to this script
// --keep     leave the temporary tree in place and print where it is
// --only     capture only the cases whose name matches (for debugging; the
//            written file then holds only those)
//
// The reference runs in-process: a LocalFilesystemBackend (isolation
// 'software': the reference's bwrap mode cannot run commands at all, see
// README.md) served by its AgentBackendMCPServer, reached by the official
// MCP SDK client over an in-memory transport, so every call goes through
// the SDK's input validation and the tool's real handler, exec and rg.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { cases as allCases, tree } from './corpus.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : def;
};
const modules = path.resolve(opt('--modules', process.env.AGENTBE_INTEROP_MODULES || path.join(here, '../../interop/node_modules')));
const outFile = path.resolve(opt('--out', path.join(here, 'reference.json')));
const only = opt('--only', null);
const keep = argv.includes('--keep');
const cases = only ? allCases.filter((c) => new RegExp(only).test(c.name)) : allCases;

const HANG_MS = 5000; // a call that has not answered by then is recorded as a hang
const RUNS = 3; // calls per case, to catch order nondeterminism

const imp = (p) => import(pathToFileURL(path.join(modules, p)).href);
const abPkg = JSON.parse(fs.readFileSync(path.join(modules, 'agent-backend/package.json'), 'utf8'));
const sdkPkg = JSON.parse(fs.readFileSync(path.join(modules, '@modelcontextprotocol/sdk/package.json'), 'utf8'));
if (abPkg.version !== '0.13.2') console.error(`warning: agent-backend is ${abPkg.version}, not 0.13.2`);
const { LocalFilesystemBackend } = await imp('agent-backend/dist/index.js');
const { AgentBackendMCPServer } = await imp('agent-backend/dist/server/index.js');
const { Client } = await imp('@modelcontextprotocol/sdk/dist/esm/client/index.js');
const { InMemoryTransport } = await imp('@modelcontextprotocol/sdk/dist/esm/inMemory.js');

// ── environment ─────────────────────────────────────────────────────────────
// The reference passes process.env (with HOME replaced by the workspace root)
// to the shell it runs rg in. Drop what would make rg read configuration from
// elsewhere than the tree.
for (const k of Object.keys(process.env)) {
  if (/^(RIPGREP_|GIT_|XDG_)/.test(k)) delete process.env[k];
}
process.env.LC_ALL = 'C.UTF-8';
const rgVersion = spawnSync('rg', ['--version'], { encoding: 'utf8' });
if (rgVersion.status !== 0) {
  console.error('rg is not installed (apt-get install -y ripgrep)');
  process.exit(2);
}

// ── tree ────────────────────────────────────────────────────────────────────
const BASE = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'grepref-')));
const ROOT = path.join(BASE, 'root');
const OUTSIDE = path.join(BASE, 'outside');

// rg reads ignore files (and looks for .git) in every parent of the searched
// directory, up to /. Refuse to capture under a parent that has any.
for (let d = path.dirname(BASE); ; d = path.dirname(d)) {
  for (const n of ['.git', '.gitignore', '.ignore', '.rgignore']) {
    if (fs.existsSync(path.join(d, n))) {
      console.error(`${path.join(d, n)} exists above the temporary tree; set TMPDIR elsewhere`);
      process.exit(2);
    }
  }
  if (d === path.dirname(d)) break;
}

function buildTree(base, entries) {
  for (const e of entries) {
    const p = path.join(base, ...e.path.split('/'));
    fs.mkdirSync(path.dirname(p), { recursive: true });
    if (e.kind === 'dir') fs.mkdirSync(p, { recursive: true });
    else if (e.kind === 'symlink') fs.symlinkSync(e.target, p);
    else if (e.text !== undefined) fs.writeFileSync(p, e.text);
    else {
      const bufs = [];
      for (const part of e.parts) {
        const b = part.b64 !== undefined ? Buffer.from(part.b64, 'base64') : Buffer.from(part.text, 'utf8');
        for (let i = 0; i < (part.repeat ?? 1); i++) bufs.push(b);
      }
      fs.writeFileSync(p, Buffer.concat(bufs));
    }
  }
}
buildTree(BASE, tree);
fs.mkdirSync(ROOT, { recursive: true });

const subst = (v) => {
  if (typeof v === 'string') return v.replaceAll('<ROOT>', ROOT).replaceAll('<OUTSIDE>', OUTSIDE);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, subst(x)]));
  return v;
};
const norm = (s) => s.replaceAll(ROOT, '<ROOT>').replaceAll(OUTSIDE, '<OUTSIDE>').replaceAll(BASE, '<BASE>');

// ── the reference, in-process ───────────────────────────────────────────────
const backend = new LocalFilesystemBackend({ rootDir: ROOT, isolation: 'software', preventDangerous: true });
const mcp = new AgentBackendMCPServer(backend);
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
await mcp.getServer().connect(serverSide);
const client = new Client({ name: 'grep-capture', version: '1.0.0' });
await client.connect(clientSide);
const listed = (await client.listTools()).tools.find((t) => t.name === 'grep');

async function callReference(args) {
  let timer;
  const hang = new Promise((res) => { timer = setTimeout(() => res({ hang: true }), HANG_MS); });
  const call = client.callTool({ name: 'grep', arguments: args }, undefined, { timeout: HANG_MS * 4 }).then(
    (r) => {
      if (r.content.length !== 1 || r.content[0].type !== 'text') return { unexpected: r };
      return { text: norm(r.content[0].text), isError: r.isError === true };
    },
    (e) => ({ rpcError: { code: e.code, message: norm(e.message) } }),
  );
  const out = await Promise.race([call, hang]);
  clearTimeout(timer);
  return out;
}

// ── a mirror of the handler, to get a path-sorted answer ────────────────────
// The reference does not sort: rg walks in parallel and in directory order.
// sortedText is what the same handler prints when rg walks with --sort path
// (one thread, each directory's entries by name), which is a deterministic
// member of the set of answers the reference can give.
function rgArgs(a, sorted) {
  const mode = a.outputMode ?? 'files_with_matches';
  const before = a.contextBefore ?? a.contextAround;
  const after = a.contextAfter ?? a.contextAround;
  const r = ['--color=never', '--no-heading', '--with-filename'];
  if (a.caseInsensitive) r.push('-i');
  if (a.multiline) r.push('-U', '--multiline-dotall');
  if (mode === 'files_with_matches') r.push('-l');
  else if (mode === 'count') r.push('-c');
  else if (mode === 'content' && a.lineNumbers) r.push('-n');
  if (mode === 'content') {
    if (before) r.push('-B', String(before));
    if (after) r.push('-A', String(after));
  }
  if (a.glob) r.push('--glob', a.glob);
  if (a.type) r.push('--type', a.type);
  if (sorted) r.push('--sort', 'path');
  r.push('--', a.pattern);
  if (a.path) r.push(a.path);
  return r;
}
const shellEscape = (s) => `'${s.replace(/'/g, "'\\''")}'`;

function callMirror(a, { sorted, noHeadLimit }) {
  const cmd = ['rg', ...rgArgs(a, sorted).map(shellEscape)].join(' ') + ' || [ $? -eq 1 ]';
  const p = spawnSync('bash', ['-c', cmd], { cwd: ROOT, env: { ...process.env, HOME: ROOT }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000 });
  if (p.status !== 0) {
    const msg = p.stderr.toString('utf-8').trim() || p.stdout.toString('utf-8').trim();
    return { text: norm(`Command execution failed with exit code ${p.status}: ${msg}`), isError: true };
  }
  const output = p.stdout.toString('utf-8').trim();
  if (output === '') return { text: 'No matches found', isError: false };
  const lines = output.split('\n');
  const hl = noHeadLimit ? undefined : a.headLimit;
  if (hl != null && lines.length > hl) {
    const kept = lines.slice(0, hl);
    kept.push(`[output truncated to first ${hl} lines; ${lines.length - hl} more hidden]`);
    return { text: norm(kept.join('\n')), isError: false };
  }
  return { text: norm(output), isError: false };
}

const multiset = (lines) => {
  const m = new Map();
  for (const l of lines) m.set(l, (m.get(l) ?? 0) + 1);
  return m;
};
const sameLines = (a, b) => {
  const x = multiset(a.split('\n'));
  const y = multiset(b.split('\n'));
  if (x.size !== y.size) return false;
  for (const [k, v] of x) if (y.get(k) !== v) return false;
  return true;
};
const subLines = (a, b) => {
  const y = multiset(b.split('\n'));
  for (const l of a.split('\n')) {
    const n = y.get(l) ?? 0;
    if (n === 0) return false;
    y.set(l, n - 1);
  }
  return true;
};

// ── capture ─────────────────────────────────────────────────────────────────
const out = [];
let problems = 0;
for (const c of cases) {
  const args = subst(c.args);
  const savedPath = process.env.PATH;
  if (c.env === 'no-rg') {
    // A PATH with bash but no rg; the backend copies process.env per call.
    const bin = path.join(BASE, 'bin-no-rg');
    fs.mkdirSync(bin, { recursive: true });
    if (!fs.existsSync(path.join(bin, 'bash'))) fs.symlinkSync(spawnSync('bash', ['-c', 'command -v bash'], { encoding: 'utf8' }).stdout.trim(), path.join(bin, 'bash'));
    process.env.PATH = bin;
  }
  const runs = [];
  for (let i = 0; i < RUNS; i++) {
    const r = await callReference(args);
    runs.push(r);
    if (r.hang) break;
  }
  process.env.PATH = savedPath;
  const reference = runs[0];
  const nondeterministic = runs.some((r) => JSON.stringify(r) !== JSON.stringify(reference));

  const rec = { name: c.name, args: c.args };
  if (c.note) rec.note = c.note;
  if (c.security) rec.security = true;
  if (c.env) rec.env = c.env;
  rec.reference = reference;
  if (nondeterministic) rec.referenceRuns = runs;

  const check = [];
  let sorted = reference;
  const handled = reference.text !== undefined && !reference.isError;
  const errorFromRg = reference.isError && reference.text.startsWith('Command execution failed');
  if (c.env !== 'no-rg' && (handled || reference.hang || errorFromRg)) {
    sorted = callMirror(args, { sorted: true });
    const unsorted = callMirror(args, { sorted: false });
    if (reference.hang) {
      check.push('reference hung; sortedText is what rg prints with stdin closed');
    } else if (args.headLimit != null && /\n\[output truncated to first \d+ lines; \d+ more hidden\]$/.test(reference.text)) {
      const full = callMirror(args, { sorted: true, noHeadLimit: true }).text;
      const body = reference.text.replace(/\n\[output truncated[^\n]*$/, '');
      if (!subLines(body, full)) check.push('MISMATCH: reference lines are not a subset of the full mirror output');
      if (reference.text.match(/\[output truncated[^\n]*$/)[0] !== sorted.text.match(/\[output truncated[^\n]*$/)?.[0]) check.push('MISMATCH: truncation note');
    } else if (reference.isError) {
      // rg words some errors differently when it walks with --sort path
      // (one thread), so an error is kept as the reference printed it.
      if (!sorted.isError) check.push('MISMATCH: the mirror did not fail');
      sorted = reference;
    } else {
      if (!sameLines(reference.text, unsorted.text)) check.push('MISMATCH: reference vs mirror (unsorted)');
      if (!sameLines(reference.text, sorted.text)) check.push('MISMATCH: reference vs mirror --sort path');
    }
  }
  rec.sorted = sorted;
  rec.orderStable = !nondeterministic && JSON.stringify(sorted) === JSON.stringify(reference);
  if (check.length) rec.check = check;
  if (check.some((m) => m.startsWith('MISMATCH'))) problems++;
  out.push(rec);
  const show = (r) => (r.hang ? 'HANG' : r.rpcError ? `rpcError ${r.rpcError.code}` : `${r.isError ? 'isError ' : ''}${JSON.stringify(r.text).slice(0, 90)}`);
  console.log(`${c.name.padEnd(40)} ${show(reference)}${rec.orderStable ? '' : '  [order]'}${nondeterministic ? ' [nondeterministic]' : ''}${check.length ? '  ' + check.join('; ') : ''}`);
}

const doc = {
  generator: 'testdata/grep/capture.mjs (corpus in corpus.mjs); see README.md',
  reference: {
    package: `agent-backend@${abPkg.version}`,
    sdk: `@modelcontextprotocol/sdk@${sdkPkg.version}`,
    rg: rgVersion.stdout.split('\n')[0],
    node: process.version,
    isolation: 'software',
  },
  placeholders: { '<BASE>': 'temporary base directory', '<ROOT>': '<BASE>/root (workspace)', '<OUTSIDE>': '<BASE>/outside (canary)' },
  tool: listed,
  tree,
  cases: out,
};
fs.writeFileSync(outFile, JSON.stringify(doc, null, 1) + '\n');
console.log(`${out.length} cases written to ${outFile}; ${problems} with mismatches`);
if (keep) console.log(`tree kept at ${BASE}`);
else fs.rmSync(BASE, { recursive: true, force: true });
// Hung calls leave rg blocked on its stdin; exiting closes that socket, and rg ends.
process.exit(problems ? 1 : 0);
