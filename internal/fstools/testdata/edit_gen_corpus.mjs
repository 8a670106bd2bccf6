// Generates tools_edit_corpus.json: what the official filesystem server's
// edit_file (applyFileEdits) writes and answers for random files and edits,
// in both eras we match: 2026.8.31 (the 2025 era) and 2.0.1 (the 2026 era).
// Each case is run for real on a scratch file; the result is the diff the
// tool returns (with the scratch path replaced by /w/f.txt) and the file's
// bytes afterwards, or the error text.
// Run from interop/ (the packages are pinned in interop/package.json):
//   node ../internal/fstools/testdata/edit_gen_corpus.mjs ../internal/fstools/testdata
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const out = process.argv[2] || '.';
const libOf = (pkg) => pathToFileURL(path.resolve('node_modules', pkg, 'dist/lib.js')).href;
const rules = {
  '2025': (await import(libOf('server-filesystem-2025'))).applyFileEdits,
  '2026': (await import(libOf('server-filesystem-2026'))).applyFileEdits,
};

// mulberry32: a small PRNG whose low bits are as random as its high ones.
let seed = 2026;
const rnd = (n) => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) % n;
};
const pick = (a) => a[rnd(a.length)];

const indents = ['', '', '  ', '    ', '        ', '\t', '\t\t', ' \t', '\u00a0', '   '];
const bodies = ['if x:', 'y = 1', 'return y', 'foo()', '}', '{', 'bar  ', 'é', '', 'end'];
const eols = ['\n', '\n', '\r\n', '\r\n', '\r'];
const line = () => pick(indents) + pick(bodies);
const file = () => {
  const eol = rnd(3) === 0 ? null : pick(['\n', '\r\n']); // null: mixed endings
  const n = 1 + rnd(8);
  let s = '';
  for (let i = 0; i < n; i++) s += line() + (i < n - 1 || rnd(2) ? (eol ?? pick(eols)) : '');
  return s;
};
// reindent changes the indentation of each line of a slice of the file,
// so the edit matches only line by line, after trimming.
const reindent = (text) => text.split(/\r?\n/).map((l) => (rnd(2) ? pick(indents) + l.trimStart() : l)).join(rnd(3) ? '\n' : '\r\n');
const oldOf = (content) => {
  const lines = content.split(/\r?\n/);
  const i = rnd(lines.length);
  const n = 1 + rnd(Math.min(3, lines.length - i));
  const slice = lines.slice(i, i + n).join('\n');
  switch (rnd(4)) {
    case 0: return slice;
    case 1: return reindent(slice);
    case 2: return pick(bodies);
    default: return rnd(4) ? reindent(slice) : 'no such text';
  }
};
const newOf = () => {
  const n = 1 + rnd(3);
  const ls = [];
  for (let i = 0; i < n; i++) ls.push(line());
  return ls.join(pick(['\n', '\r\n']));
};

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edit-corpus-'));
const f = path.join(dir, 'f.txt');
const cases = [];
for (let i = 0; i < 600; i++) {
  const content = file();
  const edits = [];
  for (let n = 1 + rnd(2); n > 0; n--) edits.push({ oldText: oldOf(content), newText: newOf() });
  const c = { content, edits };
  for (const [era, apply] of Object.entries(rules)) {
    fs.writeFileSync(f, content);
    try {
      const diff = await apply(f, edits, false);
      c[era] = { diff: diff.split(f).join('/w/f.txt'), written: fs.readFileSync(f, 'utf-8') };
    } catch (e) {
      c[era] = { error: e.message };
    }
  }
  cases.push(c);
}
fs.rmSync(dir, { recursive: true });
fs.writeFileSync(path.join(out, 'tools_edit_corpus.json'), JSON.stringify(cases, null, 1) + '\n');
const differ = cases.filter((c) => JSON.stringify(c['2025']) !== JSON.stringify(c['2026'])).length;
console.log(`${cases.length} cases, ${differ} differ between the eras`);
