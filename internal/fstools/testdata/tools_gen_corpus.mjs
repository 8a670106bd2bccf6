// Generates the reference corpora the mcp tool tests compare against:
//   tools_diff_corpus.json     jsdiff 8.0.4 createTwoFilesPatch on random texts
//   tools_glob_corpus.json     minimatch 10.2.6 (dot: true) on patterns x paths
//   tools_collate_corpus.json  names sorted with String.prototype.localeCompare
// Run from a scratch dir with `npm i diff@8.0.4 minimatch@10.2.6`:
//   cp tools_gen_corpus.mjs gen.mjs && node gen.mjs /path/to/internal/fstools/testdata
import fs from 'node:fs';
import path from 'node:path';
import { createTwoFilesPatch } from 'diff';
import { minimatch } from 'minimatch';

const out = process.argv[2] || '.';
let seed = 42;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };

const words = ['a', 'b', 'c', 'foo', 'bar', '', '  indented', 'x y', 'é', 'end'];
const text = () => {
  const n = rnd(9);
  let s = '';
  for (let i = 0; i < n; i++) s += words[rnd(words.length)] + (i < n - 1 || rnd(2) ? '\n' : '');
  return s;
};
const diffs = [];
for (let i = 0; i < 400; i++) {
  const a = text();
  let b = rnd(4) === 0 ? text() : a.split('\n').map((l) => (rnd(5) === 0 ? words[rnd(words.length)] : l)).filter(() => rnd(8) !== 0).join('\n');
  if (rnd(5) === 0) b += '\nextra\n';
  diffs.push({ old: a, new: b, patch: createTwoFilesPatch('/w/f.txt', '/w/f.txt', a, b, 'original', 'modified') });
}
fs.writeFileSync(path.join(out, 'tools_diff_corpus.json'), JSON.stringify(diffs, null, 1) + '\n');

const patterns = ['*', '**', '*.txt', '**/*.txt', 'a/*', 'a/**', '**/a', '**/a/**', '?.md', '[ab].txt', '[!a]*', 'a/b/c.txt',
  '**/*.{txt,md}', '{a,b}/**', '.*', '**/.*', 'a/**/c.txt', '*/*', 'x{1..3}', '*a*', '**/b/*', '[[:digit:]]*', 'a\\*b', '!*.txt', '#x', ''];
const paths = ['a', 'a.txt', 'b.txt', 'c.md', 'a/b', 'a/b/c.txt', 'a/.hidden', '.git', '.git/config', 'x1', 'x4', 'b/a', 'b/a/x.txt',
  'a*b', 'ab', '1file', 'dir/sub/deep', 'a/a/a'];
const globs = [];
for (const p of patterns) for (const f of paths) globs.push({ pattern: p, path: f, match: minimatch(f, p, { dot: true }) });
fs.writeFileSync(path.join(out, 'tools_glob_corpus.json'), JSON.stringify(globs) + '\n');

const names = ['.hidden', 'amb', 'cafe\u0301.txt', 'café.txt', 'crlf.txt', 'dir1', 'dirlinks', 'edit', 'empty.txt', 'empty_dir', 'hello.txt',
  'Hello.txt', 'HELLO.txt', 'large.txt', 'links', 'media', 'move', 'nonl.txt', 'sizes', 'ünïcödé.txt', 'with space.txt', 'write', '日本語',
  'Zeta.txt', 'zeta.txt', 'ñandú.txt', 'nandu.txt', 'a_b', 'a-b', 'a.b', 'a b', 'a1', 'a10', 'a2', 'A1', '_x', '-x', '1x', 'x', 'résumé', 'resume', 'Résumé',
  'file(1).txt', 'file[1].txt', 'file@2', 'file#3', 'file~', 'file$'];
const sorted = [...names].sort((a, b) => a.localeCompare(b));
fs.writeFileSync(path.join(out, 'tools_collate_corpus.json'), JSON.stringify(sorted, null, 1) + '\n');
console.log(`${diffs.length} diffs, ${globs.length} globs, ${sorted.length} names`);
