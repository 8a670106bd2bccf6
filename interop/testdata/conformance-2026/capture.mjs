#!/usr/bin/env node
// capture.mjs (2026-07-28 era) — golden-data capture / replay for MCP filesystem servers
// speaking protocol revision 2026-07-28: no initialize handshake, every request carries
// _meta["io.modelcontextprotocol/protocolVersion"] and ["io.modelcontextprotocol/clientCapabilities"].
//
// A copy of ../conformance/capture.mjs (the 2025-era harness) with the same fixture, the same
// tools/call cases and the same compare profiles; only the session layer differs:
//   * no MCP SDK: a small built-in JSON-RPC client (stdio: newline-delimited JSON on a spawned
//     process; HTTP: one POST per request with MCP-Protocol-Version, Mcp-Method and Mcp-Name);
//   * each session opens with server/discover (the stdio probe a dual-era client sends first);
//     its result is recorded in discover.json instead of initialize.json;
//   * every request carries the per-request _meta (protocolVersion 2026-07-28, clientInfo
//     {name:"fsgold-capture",version:"1.0.0"}, clientCapabilities {});
//   * there is no roots session (Roots needs server-to-client requests, which 2026-07-28 only
//     allows through multi round-trip results; the reference answers no roots in this era);
//   * instead of the initialize protocol-version variants, PROTOCOL_VARIANTS are short scripted
//     exchanges on a fresh connection each (unsupported versions, missing _meta, removed methods,
//     the stdio probe fallback, log level, progress, subscriptions/listen, ...), recorded raw in
//     discover.json (protocolVariants), with the HTTP status when run over HTTP.
//
// Modes
//   capture:  node capture.mjs --capture --out DIR  (--stdio "CMD ARGS..." | --http URL --base DIR)
//             writes DIR/golden.json, DIR/tools-list.json, DIR/discover.json
//   compare:  node capture.mjs --compare path/to/golden.json (--stdio ... | --http ...)
//             replays every case, prints a per-case summary, exits 1 on any mismatch.
//             tools-list.json and discover.json next to golden.json are compared too.
//   list:     node capture.mjs --list-workspace [--fixture F]
//             prints the cases that the agentbe profile treats as by-design (WORKSPACE); no server.
//
// Transport options
//   --stdio "CMD ARGS"   command line of the server; the token {ROOT} is replaced by the fixture
//                        root (appended as last argument when absent). A fresh process is spawned
//                        per session and per protocol variant. Env: TZ=UTC, HOME=<ROOT>.
//   --http URL           Streamable HTTP endpoint (2026-07-28 rules: stateless POSTs). The server must
//                        already run with allowed dir BASE/root (and ideally HOME=BASE/root, TZ=UTC);
//                        pass that BASE with --base. BASE must be empty, absent, or contain the marker
//                        file BASE/.fsgold-base (everything in it but root/ is wiped and rebuilt).
//   --header K:V         extra HTTP header (repeatable), e.g. --header "Authorization:Bearer x"
//   --base DIR           fixture base dir (stdio default: a fresh mkdtemp under os.tmpdir())
//
// Other options
//   --profile P          official (default): everything must match the golden data exactly
//                        (the _meta serverInfo included).
//                        agentbe: as in the 2025-era harness (see ../conformance/README.md), plus:
//                        results: resultType must match, _meta serverInfo is not compared (noted);
//                        tools/list: resultType, ttlMs and cacheScope must match, every inputSchema and
//                        outputSchema must carry the golden $schema; discover: supportedVersions must
//                        include 2026-07-28, ttlMs/cacheScope/resultType must match, capabilities.tools
//                        must be an object; protocol variants: JSON-RPC error codes and data (or the
//                        picked result fields) must match, messages are not compared.
//   --fixture F          main (default) or the path of a fixture module (.mjs), as in ../conformance.
//   --only REGEX         only report cases whose name matches (all cases still run, state is sequential)
//   --skip-protocol      skip the scripted protocol variants
//   --verbose            also list ok lines; print full expected/actual JSON for mismatches
//
// Placeholders: <ROOT> = BASE/root (the only allowed dir), <OUTSIDE> = BASE/outside,
// <BASE> = BASE. Normalisations as in ../conformance/capture.mjs, plus: "chdir '<any dir>' -> " in error texts
// becomes "chdir '<CWD>' -> " (2.x names the server process's working directory there).
//
// Needs Node >= 18 and nothing else (no npm packages).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';

const PROTOCOL_VERSION = '2026-07-28';
const CLIENT_INFO = { name: 'fsgold-capture', version: '1.0.0' };
const metaFor = (extra = {}) => ({
  'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
  'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
  'io.modelcontextprotocol/clientCapabilities': {},
  ...extra,
});

// ---------------------------------------------------------------- CLI
function parseArgs(argv) {
  const o = { headers: {}, profile: 'official' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => { if (i + 1 >= argv.length) throw new Error(`${a} needs a value`); return argv[++i]; };
    switch (a) {
      case '--capture': o.capture = true; break;
      case '--compare': o.compare = next(); break;
      case '--list-workspace': o.listWorkspace = true; break;
      case '--out': o.out = next(); break;
      case '--stdio': o.stdio = next(); break;
      case '--http': o.http = next(); break;
      case '--header': { const h = next(); const k = h.indexOf(':'); o.headers[h.slice(0, k).trim()] = h.slice(k + 1).trim(); break; }
      case '--base': o.base = next(); break;
      case '--profile': o.profile = next(); break;
      case '--fixture': o.fixture = next(); break;
      case '--only': o.only = new RegExp(next()); break;
      case '--skip-protocol': o.skipProtocol = true; break;
      case '--verbose': o.verbose = true; break;
      case '-h': case '--help': o.help = true; break;
      default: throw new Error(`unknown argument ${a}`);
    }
  }
  if (o.profile === 'default') o.profile = 'official';
  if (!['official', 'agentbe'].includes(o.profile)) throw new Error(`--profile must be official or agentbe, not ${o.profile}`);
  if (o.capture && o.profile !== 'official') throw new Error('--capture records the reference server; use it without --profile agentbe');
  return o;
}

function splitCommand(s) {
  const out = []; let cur = ''; let q = null; let any = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (q) { if (c === q) q = null; else if (c === '\\' && q === '"' && i + 1 < s.length) cur += s[++i]; else cur += c; continue; }
    if (c === '"' || c === "'") { q = c; any = true; continue; }
    if (c === '\\' && i + 1 < s.length) { cur += s[++i]; any = true; continue; }
    if (/\s/.test(c)) { if (cur || any) { out.push(cur); cur = ''; any = false; } continue; }
    cur += c; any = true;
  }
  if (cur || any) out.push(cur);
  return out;
}

// ---------------------------------------------------------------- fixture
const FIXED_TIME = new Date('2024-01-02T03:04:05Z');
const PNG_1x1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

function wav() { // 8-bit mono PCM, 8000 Hz, 64 samples of a triangle wave (pure integer arithmetic)
  const n = 64; const b = Buffer.alloc(44 + n);
  b.write('RIFF', 0); b.writeUInt32LE(36 + n, 4); b.write('WAVE', 8); b.write('fmt ', 12);
  b.writeUInt32LE(16, 16); b.writeUInt16LE(1, 20); b.writeUInt16LE(1, 22); b.writeUInt32LE(8000, 24);
  b.writeUInt32LE(8000, 28); b.writeUInt16LE(1, 32); b.writeUInt16LE(8, 34); b.write('data', 36); b.writeUInt32LE(n, 40);
  for (let i = 0; i < n; i++) { const p = i % 16; b[44 + i] = 128 + (p < 8 ? p * 12 : (16 - p) * 12) - 48; }
  return b;
}
function mp3() { // ID3v2.3 header (empty tag) + one MPEG-1 Layer III frame header + zero padding
  return Buffer.concat([Buffer.from([0x49, 0x44, 0x33, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]),
    Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(28)]);
}
function bytes256(n) { const b = Buffer.alloc(n); for (let i = 0; i < n; i++) b[i] = i % 256; return b; }
function largeText() {
  let s = ''; for (let i = 1; i <= 5000; i++) s += `Line ${String(i).padStart(5, '0')}: the quick brown fox jumps over the lazy dog\n`;
  return s;
}

// [relative path under BASE, content | {link: target} | {dir: true}, mode?]
function fixtureEntries(base) {
  return [
    ['outside/secret.txt', 'TOP SECRET\n'],
    ['outside/sub/x.txt', 'outside x\n'],
    ['root2/other.txt', 'sibling dir whose name starts with "root"\n'],
    ['root/hello.txt', 'Hello, world!\nSecond line\nThird line\n'],
    ['root/crlf.txt', 'line one\r\nline two\r\nline three\r\n'],
    ['root/nonl.txt', 'alpha\nbeta\ngamma'],
    ['root/empty.txt', ''],
    ['root/with space.txt', 'spaced\n'],
    ['root/.hidden', 'hidden file\n'],
    ['root/ünïcödé.txt', 'Unicode content: héllo wörld ✓ 日本語 😀\n'],
    ['root/日本語/ファイル.txt', 'こんにちは\n'],
    ['root/cafe\u0301.txt', 'nfd-named file\n'],
    ['root/amb/\u212B.txt', 'angstrom sign\n'],
    ['root/amb/A\u030A.txt', 'A + combining ring\n'],
    ['root/large.txt', largeText()],
    ['root/media/pixel.png', PNG_1x1],
    ['root/media/PHOTO.PNG', PNG_1x1],
    ['root/media/tone.wav', wav()],
    ['root/media/clip.mp3', mp3()],
    ['root/media/drawing.svg', '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"><rect width="1" height="1" fill="red"/></svg>\n'],
    ['root/media/data.bin', bytes256(300)],
    ['root/media/notes.txt', 'plain text, not media\n'],
    ['root/media/noext', 'no extension\n'],
    ['root/dir1/a.txt', 'a\n'],
    ['root/dir1/b.md', '# B\n'],
    ['root/dir1/sub/c.txt', 'c\n'],
    ['root/dir1/sub/deep/d.txt', 'd\n'],
    ['root/dir1/node_modules/pkg/index.js', 'module.exports = 1;\n'],
    ['root/dir1/.git/config', '[core]\n'],
    ['root/sizes/big.bin', bytes256(10000)],
    ['root/sizes/mid.txt', 'm'.repeat(2048)],
    ['root/sizes/small.txt', '12345'],
    ['root/sizes/Zeta.txt', 'abcde'],
    ['root/sizes/empty.dat', ''],
    ['root/sizes/ñandú.txt', 'xyz'],
    ['root/sizes/a_very_long_file_name_exceeding_thirty_characters.txt', '1'],
    ['root/links/inside.txt', { link: '../hello.txt' }],
    ['root/links/outside.txt', { link: path.join(base, 'outside/secret.txt') }],
    ['root/links/dangling', { link: '../does-not-exist.txt' }],
    ['root/dirlinks/todir', { link: '../dir1' }],
    ['root/dirlinks/outdir', { link: '../../outside' }],
    ['root/edit/code.py', 'def greet(name):\n    if name:\n        print("Hello, " + name)\n    else:\n        print("Hello, world")\n    return None\n'],
    ['root/edit/crlf_edit.txt', 'first\r\nsecond\r\nthird\r\n'],
    ['root/edit/nonl_edit.txt', 'one\ntwo\nthree'],
    ['root/edit/dup.txt', 'foo\nbar\nfoo\n'],
    ['root/edit/ticks.md', 'Some text\n'],
    ['root/edit/dollar.txt', 'price: X\n'],
    ['root/edit/empty_old.txt', 'abc\n'],
    ['root/write/over.txt', 'original content\n', 0o600],
    ['root/write/target.txt', 'target original\n'],
    ['root/write/link_to_target.txt', { link: 'target.txt' }],
    ['root/move/src.txt', 'to be moved\n'],
    ['root/move/existing.txt', 'already here\n'],
    ['root/move/dir_src/f.txt', 'in dir\n'],
    ['root/move/linktarget.txt', 'link target\n'],
    ['root/move/link.txt', { link: 'linktarget.txt' }],
    ['root/empty_dir', { dir: true }],
  ];
}


const KNOWN_TOP_DIRS = ['root', 'outside', 'root2'];
function isFixtureBase(base, topDirs = KNOWN_TOP_DIRS) {
  if (!fs.existsSync(base)) return true;
  const ents = fs.readdirSync(base);
  if (ents.includes('.fsgold-base')) return true;
  // a fresh base where only empty root/ (and the fixture's other top dirs) were pre-created for the server is fine too
  const allowed = new Set([...KNOWN_TOP_DIRS, ...topDirs]);
  return ents.every((e) => allowed.has(e) && fs.statSync(path.join(base, e)).isDirectory() && fs.readdirSync(path.join(base, e)).length === 0);
}

function clearDirContents(d) {
  if (!fs.existsSync(d)) { fs.mkdirSync(d, { recursive: true }); return; }
  for (const e of fs.readdirSync(d)) fs.rmSync(path.join(d, e), { recursive: true, force: true });
}

// Wipes BASE (all but the root/ directory itself, whose contents are wiped) and builds the fixture.
function buildFixture(base, fx = MAIN_FIXTURE, extraEntries = []) {
  if (!isFixtureBase(base, fx.topDirs)) throw new Error(`refusing to wipe ${base}: not empty and no .fsgold-base marker`);
  fs.mkdirSync(base, { recursive: true });
  fs.writeFileSync(path.join(base, '.fsgold-base'), 'fixture base created by capture.mjs\n');
  for (const e of fs.readdirSync(base)) {
    if (e === '.fsgold-base') continue;
    if (e === 'root') clearDirContents(path.join(base, e));
    else fs.rmSync(path.join(base, e), { recursive: true, force: true });
  }
  for (const d of fx.topDirs) fs.mkdirSync(path.join(base, d), { recursive: true });
  for (const [rel, content, mode] of [...fx.entries(base), ...extraEntries]) {
    const p = path.join(base, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    const special = content && typeof content === 'object' && !Buffer.isBuffer(content);
    if (special && content.link) { fs.symlinkSync(content.link, p); continue; }
    if (special && content.dir) { fs.mkdirSync(p, { recursive: true }); continue; }
    fs.writeFileSync(p, content);
    fs.chmodSync(p, mode ?? 0o644);
    fs.utimesSync(p, FIXED_TIME, FIXED_TIME);
  }
  // directories: fixed mode + times (deepest first so parents are not bumped afterwards)
  const all = [];
  (function walk(d) { for (const e of fs.readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) { const p = path.join(d, e.name); walk(p); all.push(p); } })(base);
  for (const d of all) { fs.chmodSync(d, 0o755); fs.utimesSync(d, FIXED_TIME, FIXED_TIME); }
}

// ---------------------------------------------------------------- cases
// Each case: {name, tool, args, loose?}. Special steps in the roots session: {name, action:'set_roots', roots}.
const R = '<ROOT>';
const MAIN_CASES = [
  // --- discovery
  { name: 'list_allowed_directories', tool: 'list_allowed_directories', args: {} },
  // --- read_text_file: plain reads
  { name: 'rt_basic', tool: 'read_text_file', args: { path: `${R}/hello.txt` } },
  { name: 'rt_crlf_full', tool: 'read_text_file', args: { path: `${R}/crlf.txt` } },
  { name: 'rt_no_trailing_newline', tool: 'read_text_file', args: { path: `${R}/nonl.txt` } },
  { name: 'rt_empty_file', tool: 'read_text_file', args: { path: `${R}/empty.txt` } },
  { name: 'rt_unicode_name', tool: 'read_text_file', args: { path: `${R}/ünïcödé.txt` } },
  { name: 'rt_cjk_dir', tool: 'read_text_file', args: { path: `${R}/日本語/ファイル.txt` } },
  { name: 'rt_space_in_name', tool: 'read_text_file', args: { path: `${R}/with space.txt` } },
  { name: 'rt_relative', tool: 'read_text_file', args: { path: 'hello.txt' } },
  { name: 'rt_relative_dot', tool: 'read_text_file', args: { path: './dir1/a.txt' } },
  { name: 'rt_dotdot_inside', tool: 'read_text_file', args: { path: `${R}/dir1/../hello.txt` } },
  { name: 'rt_double_slash', tool: 'read_text_file', args: { path: `${R}//dir1///a.txt` } },
  { name: 'rt_nfc_request_for_nfd_file', tool: 'read_text_file', args: { path: `${R}/caf\u00e9.txt` } },
  { name: 'rt_ambiguous_unicode', tool: 'read_text_file', args: { path: `${R}/amb/\u00C5.txt` } },
  { name: 'rt_tilde_home', tool: 'read_text_file', args: { path: '~/hello.txt' } },
  { name: 'rt_binary_as_text', tool: 'read_text_file', args: { path: `${R}/media/pixel.png` } },
  // --- read_text_file: head / tail
  { name: 'rt_head_2', tool: 'read_text_file', args: { path: `${R}/hello.txt`, head: 2 } },
  { name: 'rt_tail_2', tool: 'read_text_file', args: { path: `${R}/hello.txt`, tail: 2 } },
  { name: 'rt_tail_1_trailing_newline', tool: 'read_text_file', args: { path: `${R}/hello.txt`, tail: 1 } },
  { name: 'rt_head_crlf', tool: 'read_text_file', args: { path: `${R}/crlf.txt`, head: 2 } },
  { name: 'rt_tail_crlf', tool: 'read_text_file', args: { path: `${R}/crlf.txt`, tail: 2 } },
  { name: 'rt_head_nonl_more_than_lines', tool: 'read_text_file', args: { path: `${R}/nonl.txt`, head: 5 } },
  { name: 'rt_tail_nonl', tool: 'read_text_file', args: { path: `${R}/nonl.txt`, tail: 2 } },
  { name: 'rt_tail_more_than_lines', tool: 'read_text_file', args: { path: `${R}/nonl.txt`, tail: 10 } },
  { name: 'rt_head_zero_reads_all', tool: 'read_text_file', args: { path: `${R}/hello.txt`, head: 0 } },
  { name: 'rt_head_negative', tool: 'read_text_file', args: { path: `${R}/hello.txt`, head: -1 } },
  { name: 'rt_head_fractional', tool: 'read_text_file', args: { path: `${R}/hello.txt`, head: 1.5 } },
  { name: 'rt_head_and_tail_error', tool: 'read_text_file', args: { path: `${R}/hello.txt`, head: 1, tail: 1 } },
  { name: 'rt_head_zero_and_tail', tool: 'read_text_file', args: { path: `${R}/hello.txt`, head: 0, tail: 2 } },
  { name: 'rt_head_and_tail_missing_file', tool: 'read_text_file', args: { path: `${R}/missing.txt`, head: 1, tail: 1 } },
  { name: 'rt_head_large', tool: 'read_text_file', args: { path: `${R}/large.txt`, head: 3 } },
  { name: 'rt_tail_large', tool: 'read_text_file', args: { path: `${R}/large.txt`, tail: 3 } },
  { name: 'rt_tail_empty_file', tool: 'read_text_file', args: { path: `${R}/empty.txt`, tail: 3 } },
  { name: 'rt_head_empty_file', tool: 'read_text_file', args: { path: `${R}/empty.txt`, head: 3 } },
  { name: 'rt_head_unicode', tool: 'read_text_file', args: { path: `${R}/ünïcödé.txt`, head: 1 } },
  // --- read_text_file: errors & path security
  { name: 'rt_missing', tool: 'read_text_file', args: { path: `${R}/missing.txt` } },
  { name: 'rt_missing_parent', tool: 'read_text_file', args: { path: `${R}/nodir/x.txt` } },
  { name: 'rt_directory', tool: 'read_text_file', args: { path: `${R}/dir1` } },
  { name: 'rt_root_itself', tool: 'read_text_file', args: { path: R } },
  { name: 'rt_outside_abs', tool: 'read_text_file', args: { path: '<OUTSIDE>/secret.txt' } },
  { name: 'rt_dotdot_traversal_abs', tool: 'read_text_file', args: { path: `${R}/../outside/secret.txt` } },
  { name: 'rt_dotdot_traversal_rel', tool: 'read_text_file', args: { path: '../outside/secret.txt' } },
  { name: 'rt_prefix_sibling', tool: 'read_text_file', args: { path: '<BASE>/root2/other.txt' } },
  { name: 'rt_etc_passwd', tool: 'read_text_file', args: { path: '/etc/passwd' } },
  { name: 'rt_symlink_inside', tool: 'read_text_file', args: { path: `${R}/links/inside.txt` } },
  { name: 'rt_symlink_outside', tool: 'read_text_file', args: { path: `${R}/links/outside.txt` } },
  { name: 'rt_symlink_dangling', tool: 'read_text_file', args: { path: `${R}/links/dangling` } },
  { name: 'rt_via_symlinked_dir_inside', tool: 'read_text_file', args: { path: `${R}/dirlinks/todir/a.txt` } },
  { name: 'rt_via_symlinked_dir_outside', tool: 'read_text_file', args: { path: `${R}/dirlinks/outdir/secret.txt` } },
  { name: 'rt_windows_path', tool: 'read_text_file', args: { path: 'C:\\Windows\\win.ini' } },
  { name: 'rt_null_byte', tool: 'read_text_file', args: { path: `${R}/hello.txt\u0000.png` } },
  { name: 'rt_missing_path_arg', tool: 'read_text_file', args: {}, loose: true },
  { name: 'rt_head_wrong_type', tool: 'read_text_file', args: { path: `${R}/hello.txt`, head: '2' }, loose: true },
  { name: 'rt_extra_arg_ignored', tool: 'read_text_file', args: { path: `${R}/nonl.txt`, bogus: true } },
  // --- read_file (deprecated alias)
  { name: 'rf_basic', tool: 'read_file', args: { path: `${R}/hello.txt` } },
  { name: 'rf_tail', tool: 'read_file', args: { path: `${R}/hello.txt`, tail: 2 } },
  { name: 'rf_missing', tool: 'read_file', args: { path: `${R}/missing.txt` } },
  // --- read_media_file
  { name: 'media_png', tool: 'read_media_file', args: { path: `${R}/media/pixel.png` } },
  { name: 'media_png_uppercase_ext', tool: 'read_media_file', args: { path: `${R}/media/PHOTO.PNG` } },
  { name: 'media_wav', tool: 'read_media_file', args: { path: `${R}/media/tone.wav` } },
  { name: 'media_mp3', tool: 'read_media_file', args: { path: `${R}/media/clip.mp3` } },
  { name: 'media_svg', tool: 'read_media_file', args: { path: `${R}/media/drawing.svg` } },
  { name: 'media_bin_resource', tool: 'read_media_file', args: { path: `${R}/media/data.bin` } },
  { name: 'media_txt_resource', tool: 'read_media_file', args: { path: `${R}/media/notes.txt` } },
  { name: 'media_noext_resource', tool: 'read_media_file', args: { path: `${R}/media/noext` } },
  { name: 'media_empty_file', tool: 'read_media_file', args: { path: `${R}/empty.txt` } },
  { name: 'media_unicode_name_uri', tool: 'read_media_file', args: { path: `${R}/ünïcödé.txt` } },
  { name: 'media_space_name_uri', tool: 'read_media_file', args: { path: `${R}/with space.txt` } },
  { name: 'media_missing', tool: 'read_media_file', args: { path: `${R}/media/missing.png` } },
  { name: 'media_directory', tool: 'read_media_file', args: { path: `${R}/media` } },
  { name: 'media_outside', tool: 'read_media_file', args: { path: '<OUTSIDE>/secret.txt' } },
  // --- read_multiple_files
  { name: 'rmf_two', tool: 'read_multiple_files', args: { paths: [`${R}/hello.txt`, `${R}/nonl.txt`] } },
  { name: 'rmf_single', tool: 'read_multiple_files', args: { paths: [`${R}/empty.txt`] } },
  { name: 'rmf_mixed_errors', tool: 'read_multiple_files', args: { paths: [`${R}/dir1/a.txt`, `${R}/missing.txt`, '<OUTSIDE>/secret.txt', `${R}/dir1`, 'dir1/b.md'] } },
  { name: 'rmf_crlf_and_unicode', tool: 'read_multiple_files', args: { paths: [`${R}/crlf.txt`, `${R}/ünïcödé.txt`] } },
  { name: 'rmf_empty_array', tool: 'read_multiple_files', args: { paths: [] }, loose: true },
  // --- list_directory
  { name: 'ld_root', tool: 'list_directory', args: { path: R } },
  { name: 'ld_dir1', tool: 'list_directory', args: { path: `${R}/dir1` } },
  { name: 'ld_empty_dir', tool: 'list_directory', args: { path: `${R}/empty_dir` } },
  { name: 'ld_links', tool: 'list_directory', args: { path: `${R}/links` } },
  { name: 'ld_dirlinks', tool: 'list_directory', args: { path: `${R}/dirlinks` } },
  { name: 'ld_via_symlinked_dir', tool: 'list_directory', args: { path: `${R}/dirlinks/todir` } },
  { name: 'ld_relative_dot', tool: 'list_directory', args: { path: '.' } },
  { name: 'ld_empty_string', tool: 'list_directory', args: { path: '' } },
  { name: 'ld_missing', tool: 'list_directory', args: { path: `${R}/nope` } },
  { name: 'ld_on_file', tool: 'list_directory', args: { path: `${R}/hello.txt` } },
  { name: 'ld_outside', tool: 'list_directory', args: { path: '<OUTSIDE>' } },
  { name: 'ld_outside_via_link', tool: 'list_directory', args: { path: `${R}/dirlinks/outdir` } },
  // --- list_directory_with_sizes
  { name: 'lds_sizes_by_name', tool: 'list_directory_with_sizes', args: { path: `${R}/sizes` } },
  { name: 'lds_sizes_by_size', tool: 'list_directory_with_sizes', args: { path: `${R}/sizes`, sortBy: 'size' } },
  { name: 'lds_root', tool: 'list_directory_with_sizes', args: { path: R, sortBy: 'name' } },
  { name: 'lds_media', tool: 'list_directory_with_sizes', args: { path: `${R}/media` } },
  { name: 'lds_links', tool: 'list_directory_with_sizes', args: { path: `${R}/links` } },
  { name: 'lds_empty_dir', tool: 'list_directory_with_sizes', args: { path: `${R}/empty_dir` } },
  { name: 'lds_missing', tool: 'list_directory_with_sizes', args: { path: `${R}/nope` } },
  { name: 'lds_bad_sortBy', tool: 'list_directory_with_sizes', args: { path: `${R}/sizes`, sortBy: 'date' }, loose: true },
  // --- directory_tree
  { name: 'dt_dir1', tool: 'directory_tree', args: { path: `${R}/dir1` } },
  { name: 'dt_exclude_node_modules', tool: 'directory_tree', args: { path: `${R}/dir1`, excludePatterns: ['node_modules'] } },
  { name: 'dt_exclude_star_txt', tool: 'directory_tree', args: { path: `${R}/dir1`, excludePatterns: ['*.txt'] } },
  { name: 'dt_exclude_globstar_txt', tool: 'directory_tree', args: { path: `${R}/dir1`, excludePatterns: ['**/*.txt'] } },
  { name: 'dt_exclude_name_deep', tool: 'directory_tree', args: { path: `${R}/dir1`, excludePatterns: ['deep'] } },
  { name: 'dt_exclude_path_sub_deep', tool: 'directory_tree', args: { path: `${R}/dir1`, excludePatterns: ['sub/deep'] } },
  { name: 'dt_exclude_dotgit_and_nm', tool: 'directory_tree', args: { path: `${R}/dir1`, excludePatterns: ['.git', 'node_modules'] } },
  { name: 'dt_exclude_star_name', tool: 'directory_tree', args: { path: `${R}/dir1`, excludePatterns: ['*sub*'] } },
  { name: 'dt_relative', tool: 'directory_tree', args: { path: 'dir1', excludePatterns: ['node_modules'] } },
  { name: 'dt_empty_dir', tool: 'directory_tree', args: { path: `${R}/empty_dir` } },
  { name: 'dt_links', tool: 'directory_tree', args: { path: `${R}/links` } },
  { name: 'dt_dirlinks', tool: 'directory_tree', args: { path: `${R}/dirlinks` } },
  { name: 'dt_root', tool: 'directory_tree', args: { path: R, excludePatterns: ['large.txt'] } },
  { name: 'dt_missing', tool: 'directory_tree', args: { path: `${R}/nope` } },
  { name: 'dt_on_file', tool: 'directory_tree', args: { path: `${R}/hello.txt` } },
  { name: 'dt_outside', tool: 'directory_tree', args: { path: '<OUTSIDE>' } },
  // --- search_files
  { name: 'sf_star_txt_toplevel', tool: 'search_files', args: { path: R, pattern: '*.txt' } },
  { name: 'sf_globstar_txt', tool: 'search_files', args: { path: R, pattern: '**/*.txt' } },
  { name: 'sf_globstar_all', tool: 'search_files', args: { path: R, pattern: '**' } },
  { name: 'sf_dir1_exclude_nm', tool: 'search_files', args: { path: `${R}/dir1`, pattern: '**/*', excludePatterns: ['node_modules'] } },
  { name: 'sf_dir1_exclude_nm_globstar', tool: 'search_files', args: { path: `${R}/dir1`, pattern: '**/*', excludePatterns: ['**/node_modules/**'] } },
  { name: 'sf_dir1_exclude_star_txt', tool: 'search_files', args: { path: `${R}/dir1`, pattern: '**/*', excludePatterns: ['*.txt'] } },
  { name: 'sf_exact_name_toplevel', tool: 'search_files', args: { path: `${R}/dir1`, pattern: 'a.txt' } },
  { name: 'sf_exact_name_nested_nomatch', tool: 'search_files', args: { path: `${R}/dir1`, pattern: 'c.txt' } },
  { name: 'sf_substring_no_longer_matches', tool: 'search_files', args: { path: R, pattern: 'hello' } },
  { name: 'sf_dotfiles', tool: 'search_files', args: { path: R, pattern: '**/.*' } },
  { name: 'sf_case_sensitive', tool: 'search_files', args: { path: `${R}/media`, pattern: '*.PNG' } },
  { name: 'sf_brace', tool: 'search_files', args: { path: R, pattern: '**/*.{png,wav}' } },
  { name: 'sf_dirs_match', tool: 'search_files', args: { path: R, pattern: '**/sub' } },
  { name: 'sf_unicode', tool: 'search_files', args: { path: R, pattern: '**/*ファイル*' } },
  { name: 'sf_no_matches', tool: 'search_files', args: { path: R, pattern: '**/*.nothing' } },
  { name: 'sf_via_symlinked_dir', tool: 'search_files', args: { path: `${R}/dirlinks/todir`, pattern: '*.md' } },
  { name: 'sf_missing_dir', tool: 'search_files', args: { path: `${R}/nope`, pattern: '*' } },
  { name: 'sf_outside', tool: 'search_files', args: { path: '<OUTSIDE>', pattern: '*' } },
  { name: 'sf_on_file', tool: 'search_files', args: { path: `${R}/hello.txt`, pattern: '*' } },
  // --- get_file_info
  { name: 'gfi_file', tool: 'get_file_info', args: { path: `${R}/hello.txt` } },
  { name: 'gfi_empty', tool: 'get_file_info', args: { path: `${R}/empty.txt` } },
  { name: 'gfi_large', tool: 'get_file_info', args: { path: `${R}/large.txt` } },
  { name: 'gfi_dir', tool: 'get_file_info', args: { path: `${R}/dir1` } },
  { name: 'gfi_symlink_follows', tool: 'get_file_info', args: { path: `${R}/links/inside.txt` } },
  { name: 'gfi_mode_600', tool: 'get_file_info', args: { path: `${R}/write/over.txt` } },
  { name: 'gfi_missing', tool: 'get_file_info', args: { path: `${R}/missing.txt` } },
  { name: 'gfi_outside', tool: 'get_file_info', args: { path: '<OUTSIDE>/secret.txt' } },
  // --- write_file
  { name: 'wf_new', tool: 'write_file', args: { path: `${R}/write/new.txt`, content: 'New content\nline 2' } },
  { name: 'wf_new_readback', tool: 'read_text_file', args: { path: `${R}/write/new.txt` } },
  { name: 'wf_new_info', tool: 'get_file_info', args: { path: `${R}/write/new.txt` } },
  { name: 'wf_overwrite_keeps_mode', tool: 'write_file', args: { path: `${R}/write/over.txt`, content: 'replaced\n' } },
  { name: 'wf_overwrite_readback', tool: 'read_text_file', args: { path: `${R}/write/over.txt` } },
  { name: 'wf_overwrite_info', tool: 'get_file_info', args: { path: `${R}/write/over.txt` } },
  { name: 'wf_unicode_name_and_content', tool: 'write_file', args: { path: `${R}/write/новый файл.txt`, content: 'привет, мир ✓\r\nCRLF kept\r\n' } },
  { name: 'wf_unicode_readback', tool: 'read_text_file', args: { path: `${R}/write/новый файл.txt` } },
  { name: 'wf_empty_content', tool: 'write_file', args: { path: `${R}/write/empty_new.txt`, content: '' } },
  { name: 'wf_relative', tool: 'write_file', args: { path: 'write/rel.txt', content: 'relative\n' } },
  { name: 'wf_through_inside_symlink', tool: 'write_file', args: { path: `${R}/write/link_to_target.txt`, content: 'written via link\n' } },
  { name: 'wf_through_symlink_target_readback', tool: 'read_text_file', args: { path: `${R}/write/target.txt` } },
  { name: 'wf_list_after', tool: 'list_directory', args: { path: `${R}/write` } },
  { name: 'wf_missing_parent', tool: 'write_file', args: { path: `${R}/write/no/such/dir/f.txt`, content: 'x' } },
  { name: 'wf_outside', tool: 'write_file', args: { path: '<OUTSIDE>/evil.txt', content: 'x' } },
  { name: 'wf_dotdot_outside', tool: 'write_file', args: { path: `${R}/../outside/evil.txt`, content: 'x' } },
  { name: 'wf_through_outside_symlink', tool: 'write_file', args: { path: `${R}/links/outside.txt`, content: 'x' } },
  { name: 'wf_onto_directory', tool: 'write_file', args: { path: `${R}/empty_dir`, content: 'x' } },
  { name: 'wf_missing_content', tool: 'write_file', args: { path: `${R}/write/x.txt` }, loose: true },
  // --- edit_file
  { name: 'ef_dry_run', tool: 'edit_file', args: { path: `${R}/edit/code.py`, edits: [{ oldText: 'print("Hello, world")', newText: 'print("Hi, world")' }], dryRun: true } },
  { name: 'ef_dry_run_unchanged', tool: 'read_text_file', args: { path: `${R}/edit/code.py` } },
  { name: 'ef_apply', tool: 'edit_file', args: { path: `${R}/edit/code.py`, edits: [{ oldText: 'print("Hello, world")', newText: 'print("Hi, world")' }] } },
  { name: 'ef_whitespace_flexible', tool: 'edit_file', args: { path: `${R}/edit/code.py`, edits: [{ oldText: 'if name:\n    print("Hello, " + name)', newText: 'if name:\n    print("Hey, " + name)\n    log(name)' }] } },
  { name: 'ef_multi_edits', tool: 'edit_file', args: { path: `${R}/edit/code.py`, edits: [{ oldText: 'def greet(name):', newText: 'def greet(name, loud=False):' }, { oldText: '    return None', newText: '    return name' }] } },
  { name: 'ef_code_readback', tool: 'read_text_file', args: { path: `${R}/edit/code.py` } },
  { name: 'ef_no_match', tool: 'edit_file', args: { path: `${R}/edit/code.py`, edits: [{ oldText: 'this text does not exist', newText: 'x' }] } },
  { name: 'ef_second_edit_fails_nothing_written', tool: 'edit_file', args: { path: `${R}/edit/dup.txt`, edits: [{ oldText: 'bar', newText: 'BAR' }, { oldText: 'zzz', newText: 'y' }] } },
  { name: 'ef_first_occurrence_only', tool: 'edit_file', args: { path: `${R}/edit/dup.txt`, edits: [{ oldText: 'foo', newText: 'FOO' }] } },
  { name: 'ef_dup_readback', tool: 'read_text_file', args: { path: `${R}/edit/dup.txt` } },
  { name: 'ef_crlf_file', tool: 'edit_file', args: { path: `${R}/edit/crlf_edit.txt`, edits: [{ oldText: 'second\r\n', newText: 'SECOND\r\n' }] } },
  { name: 'ef_crlf_readback_now_lf', tool: 'read_text_file', args: { path: `${R}/edit/crlf_edit.txt` } },
  { name: 'ef_no_trailing_newline', tool: 'edit_file', args: { path: `${R}/edit/nonl_edit.txt`, edits: [{ oldText: 'three', newText: 'THREE' }] } },
  { name: 'ef_backticks_in_diff', tool: 'edit_file', args: { path: `${R}/edit/ticks.md`, edits: [{ oldText: 'Some text', newText: '```js\ncode()\n```' }] } },
  { name: 'ef_dollar_patterns_literal', tool: 'edit_file', args: { path: `${R}/edit/dollar.txt`, edits: [{ oldText: 'X', newText: "$& $1 $$ $` $'" }] } },
  { name: 'ef_dollar_readback', tool: 'read_text_file', args: { path: `${R}/edit/dollar.txt` } },
  { name: 'ef_empty_oldtext', tool: 'edit_file', args: { path: `${R}/edit/empty_old.txt`, edits: [{ oldText: '', newText: 'PREFIX-' }] } },
  { name: 'ef_empty_edits', tool: 'edit_file', args: { path: `${R}/edit/empty_old.txt`, edits: [] } },
  { name: 'ef_missing_file', tool: 'edit_file', args: { path: `${R}/edit/missing.txt`, edits: [{ oldText: 'a', newText: 'b' }] } },
  { name: 'ef_outside', tool: 'edit_file', args: { path: '<OUTSIDE>/secret.txt', edits: [{ oldText: 'TOP', newText: 'x' }] } },
  { name: 'ef_through_outside_symlink', tool: 'edit_file', args: { path: `${R}/links/outside.txt`, edits: [{ oldText: 'TOP', newText: 'x' }] } },
  { name: 'ef_missing_edits_arg', tool: 'edit_file', args: { path: `${R}/edit/dup.txt` }, loose: true },
  // --- create_directory
  { name: 'cd_nested', tool: 'create_directory', args: { path: `${R}/newdir/a/b` } },
  { name: 'cd_existing', tool: 'create_directory', args: { path: `${R}/dir1` } },
  { name: 'cd_relative', tool: 'create_directory', args: { path: 'newdir/rel' } },
  { name: 'cd_on_file', tool: 'create_directory', args: { path: `${R}/hello.txt` } },
  { name: 'cd_under_file', tool: 'create_directory', args: { path: `${R}/hello.txt/sub` } },
  { name: 'cd_outside', tool: 'create_directory', args: { path: '<OUTSIDE>/newdir' } },
  { name: 'cd_list_after', tool: 'directory_tree', args: { path: `${R}/newdir` } },
  // --- move_file
  { name: 'mv_rename', tool: 'move_file', args: { source: `${R}/move/src.txt`, destination: `${R}/move/renamed.txt` } },
  { name: 'mv_onto_existing', tool: 'move_file', args: { source: `${R}/move/renamed.txt`, destination: `${R}/move/existing.txt` } },
  { name: 'mv_onto_itself', tool: 'move_file', args: { source: `${R}/move/existing.txt`, destination: `${R}/move/existing.txt` } },
  { name: 'mv_onto_existing_dir', tool: 'move_file', args: { source: `${R}/move/renamed.txt`, destination: `${R}/move/dir_src` } },
  { name: 'mv_directory', tool: 'move_file', args: { source: `${R}/move/dir_src`, destination: `${R}/move/dir_dst` } },
  { name: 'mv_into_missing_dir', tool: 'move_file', args: { source: `${R}/move/renamed.txt`, destination: `${R}/move/nope/renamed.txt` } },
  { name: 'mv_missing_source', tool: 'move_file', args: { source: `${R}/move/ghost.txt`, destination: `${R}/move/ghost2.txt` } },
  { name: 'mv_to_outside', tool: 'move_file', args: { source: `${R}/move/renamed.txt`, destination: '<OUTSIDE>/stolen.txt' } },
  { name: 'mv_from_outside', tool: 'move_file', args: { source: '<OUTSIDE>/secret.txt', destination: `${R}/move/secret.txt` } },
  { name: 'mv_symlink_moves_target', tool: 'move_file', args: { source: `${R}/move/link.txt`, destination: `${R}/move/moved_link.txt` } },
  { name: 'mv_relative', tool: 'move_file', args: { source: 'move/renamed.txt', destination: 'move/renamed2.txt' } },
  { name: 'mv_list_after', tool: 'list_directory', args: { path: `${R}/move` } },
  { name: 'mv_tree_after', tool: 'directory_tree', args: { path: `${R}/move` } },
  // --- misc
  { name: 'unknown_tool', tool: 'no_such_tool', args: {}, loose: true },
];

const ROOTS_CASES = [
  // client advertises roots {listChanged:true} and answers roots/list with <ROOT>/dir1
  { name: 'roots_initial_allowed', tool: 'list_allowed_directories', args: {} },
  { name: 'roots_read_outside_root', tool: 'read_text_file', args: { path: `${R}/hello.txt` } },
  { name: 'roots_read_inside_root', tool: 'read_text_file', args: { path: `${R}/dir1/a.txt` } },
  { name: 'roots_relative_resolves_to_root', tool: 'read_text_file', args: { path: 'b.md' } },
  // a non-file:// uri makes the whole roots/list result fail SDK validation -> roots unchanged
  { name: 'roots_change_invalid_uri', action: 'set_roots', roots: [{ uri: `file://${R}/sizes` }, { uri: `${R}/media` }] },
  { name: 'roots_after_invalid_unchanged', tool: 'list_allowed_directories', args: {} },
  // valid change: two dirs kept; nonexistent dir and a regular file are skipped
  { name: 'roots_change_to_two', action: 'set_roots', roots: [{ uri: `file://${R}/sizes`, name: 'sizes' }, { uri: 'file://<BASE>/does-not-exist' }, { uri: `file://${R}/hello.txt` }, { uri: `file://${R}/media/` }] },
  { name: 'roots_after_change_allowed', tool: 'list_allowed_directories', args: {} },
  { name: 'roots_after_change_read', tool: 'read_text_file', args: { path: `${R}/sizes/small.txt` } },
  { name: 'roots_after_change_relative', tool: 'read_text_file', args: { path: 'small.txt' } },
  { name: 'roots_after_change_old_denied', tool: 'read_text_file', args: { path: `${R}/dir1/a.txt` } },
  { name: 'roots_change_to_symlinked_dir', action: 'set_roots', roots: [{ uri: `file://${R}/dirlinks/todir` }] },
  { name: 'roots_after_symlinked_allowed', tool: 'list_allowed_directories', args: {} },
  { name: 'roots_change_to_empty', action: 'set_roots', roots: [] },
  { name: 'roots_after_empty_unchanged', tool: 'list_allowed_directories', args: {} },
];
const INITIAL_ROOTS = [{ uri: `file://${R}/dir1`, name: 'dir1' }];
// Scripted protocol exchanges, each on a fresh connection (stdio: a fresh process). A step is
// {send} (a JSON-RPC message; params._meta === DEFAULT_META is replaced by the standard 2026-07-28
// _meta, a function of it is called with it) and optionally {pick: [...]} (the result fields the
// agentbe profile compares; errors are compared by code and data). `transport` limits a variant to
// 'stdio' (where the first message decides the connection's era) or 'http'. `info` marks a variant
// whose reference answer is an implementation choice the specification leaves open (or a quirk of
// the reference's SDK, such as dropping back to the 2025 era when a message without _meta follows
// the discover probe): the agentbe profile reports its differences as notes, not mismatches.
const DEFAULT_META = '<DEFAULT_META>';
const M = (extra) => ({ ...metaFor(), ...extra });
const noInfo = () => { const m = metaFor(); delete m['io.modelcontextprotocol/clientInfo']; return m; };
const req = (id, method, params = {}, meta = DEFAULT_META) => ({ jsonrpc: '2.0', id, method, params: meta === null ? params : { ...params, _meta: meta } });
const DISCOVER = (id = 1) => req(id, 'server/discover');
const INIT = (id, v = '2025-11-25') => ({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: v, capabilities: {}, clientInfo: CLIENT_INFO } });
const PROTOCOL_VARIANTS = [
  { name: 'discover', about: 'server/discover with the full _meta', steps: [{ send: DISCOVER(), pick: ['resultType', 'supportedVersions', 'ttlMs', 'cacheScope'] }] },
  { name: 'discover_string_id', about: 'a string request id is echoed', steps: [{ send: { ...DISCOVER(), id: 'discover-1' }, pick: ['resultType'] }] },
  { name: 'discover_without_clientinfo', about: 'clientInfo is optional', steps: [{ send: req(1, 'server/discover', {}, noInfo()), pick: ['resultType'] }] },
  { name: 'discover_version_1999', about: 'unknown version -> -32022 with data.supported/requested', steps: [{ send: req(1, 'server/discover', {}, M({ 'io.modelcontextprotocol/protocolVersion': '1999-01-01' })) }] },
  { name: 'discover_version_2025_11_25_in_meta', about: 'a 2025 version claimed in _meta', steps: [{ send: req(1, 'server/discover', {}, M({ 'io.modelcontextprotocol/protocolVersion': '2025-11-25' })) }] },
  { name: 'discover_missing_client_capabilities', about: 'required clientCapabilities missing -> -32602', steps: [{ send: req(1, 'server/discover', {}, { 'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION, 'io.modelcontextprotocol/clientInfo': CLIENT_INFO }) }] },
  { name: 'discover_missing_protocol_version', info: true, about: 'required protocolVersion missing', steps: [{ send: req(1, 'server/discover', {}, { 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': CLIENT_INFO }) }] },
  { name: 'discover_without_meta', info: true, about: 'server/discover with no _meta at all', steps: [{ send: req(1, 'server/discover', {}, null) }] },
  { name: 'tools_list_first', about: 'no discover: the first request is tools/list with the full _meta', steps: [{ send: req(1, 'tools/list'), pick: ['resultType', 'ttlMs', 'cacheScope'] }] },
  { name: 'tools_list_bad_cursor', info: true, about: 'an unknown cursor', steps: [{ send: DISCOVER() }, { send: req(2, 'tools/list', { cursor: 'no-such-cursor' }) }] },
  { name: 'tools_call_missing_name', about: 'tools/call without a name', steps: [{ send: DISCOVER() }, { send: req(2, 'tools/call', { arguments: {} }) }] },
  {
    name: 'removed_and_unknown_methods', about: 'methods removed in 2026-07-28 or not served by a tools-only server -> -32601',
    steps: [{ send: DISCOVER() }, { send: req(2, 'ping') }, { send: req(3, 'logging/setLevel', { level: 'debug' }) }, { send: req(4, 'resources/subscribe', { uri: 'file:///x' }) },
      { send: req(5, 'resources/list') }, { send: req(6, 'prompts/list') }, { send: req(7, 'completion/complete', { ref: { type: 'ref/prompt', name: 'x' }, argument: { name: 'a', value: '' } }) },
      { send: req(8, 'tasks/get', { taskId: 'no-such-task' }) }, { send: req(9, 'tasks/result', { taskId: 'no-such-task' }) }, { send: req(10, 'tasks/list') }, { send: req(11, 'no/such_method') }],
  },
  { name: 'initialize_first', about: 'a 2025-era client: initialize as the first message (dual-era server answers it)', steps: [{ send: INIT(1), pick: ['protocolVersion'] }, { send: { jsonrpc: '2.0', method: 'notifications/initialized' } }, { send: req(2, 'tools/list', {}, null), pick: [] }] },
  { name: 'initialize_after_modern', about: 'initialize on a connection already pinned to 2026-07-28', transport: 'stdio', steps: [{ send: DISCOVER() }, { send: req(2, 'tools/list'), pick: ['resultType'] }, { send: INIT(3) }] },
  { name: 'probe_then_initialize', info: true, about: 'a dual-era client whose discover probe succeeded but which falls back to initialize anyway', transport: 'stdio', steps: [{ send: DISCOVER() }, { send: INIT(2), pick: ['protocolVersion'] }] },
  { name: 'request_without_meta_after_modern', info: true, about: 'a request without _meta on a modern connection', transport: 'stdio', steps: [{ send: DISCOVER() }, { send: req(2, 'tools/list', {}, null) }] },
  { name: 'modern_after_initialize', info: true, about: 'a modern request on a connection pinned to 2025 by initialize', transport: 'stdio', steps: [{ send: INIT(1), pick: ['protocolVersion'] }, { send: { jsonrpc: '2.0', method: 'notifications/initialized' } }, { send: req(2, 'server/discover') }] },
  { name: 'log_level_debug', about: 'per-request log level: notifications/message MAY flow before the result', steps: [{ send: DISCOVER() }, { send: req(2, 'tools/call', { name: 'read_text_file', arguments: { path: '<ROOT>/hello.txt' } }, M({ 'io.modelcontextprotocol/logLevel': 'debug' })), pick: ['resultType', 'content'] }] },
  { name: 'log_level_invalid', about: 'an unknown log level in _meta', steps: [{ send: DISCOVER() }, { send: req(2, 'tools/call', { name: 'read_text_file', arguments: { path: '<ROOT>/hello.txt' } }, M({ 'io.modelcontextprotocol/logLevel': 'verbose' })) }] },
  { name: 'progress_token', about: 'a progressToken: notifications/progress MAY flow', steps: [{ send: DISCOVER() }, { send: req(2, 'tools/call', { name: 'read_text_file', arguments: { path: '<ROOT>/hello.txt' } }, M({ progressToken: 'p-1' })), pick: ['resultType', 'content'] }] },
  { name: 'traceparent', about: 'W3C trace context in _meta is accepted', steps: [{ send: DISCOVER() }, { send: req(2, 'tools/call', { name: 'read_text_file', arguments: { path: '<ROOT>/hello.txt' } }, M({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01', tracestate: 'vendor=1' })), pick: ['resultType', 'content'] }] },
  { name: 'tasks_capability_declared', about: 'the client declares io.modelcontextprotocol/tasks; a server without the extension answers normally', steps: [{ send: DISCOVER() }, { send: req(2, 'tools/call', { name: 'read_text_file', arguments: { path: '<ROOT>/hello.txt' } }, M({ 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } })), pick: ['resultType', 'content'] }] },
  { name: 'tools_call_2025_task_param', about: 'the 2025-11-25 task parameter is ignored in 2026-07-28', steps: [{ send: DISCOVER() }, { send: req(2, 'tools/call', { name: 'read_text_file', arguments: { path: '<ROOT>/hello.txt' }, task: { ttl: 60000 } }), pick: ['resultType', 'content'] }] },
  { name: 'cancel_unknown_request', info: true, about: 'notifications/cancelled for an unknown id is ignored', transport: 'stdio', steps: [{ send: DISCOVER() }, { send: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 999, reason: 'test' } } }, { send: req(2, 'tools/list'), pick: ['resultType'] }] },
  { name: 'subscriptions_listen', about: 'subscriptions/listen: acknowledged notification first, the request stays open until cancelled', transport: 'stdio', steps: [{ send: DISCOVER() }, { send: req(2, 'subscriptions/listen', { notifications: { toolsListChanged: true, resourcesListChanged: true } }), waitMs: 2000 }, { send: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2 } } }, { send: req(3, 'tools/list'), pick: ['resultType'] }] },
];
function materialize(v, subst) {
  const fill = (m) => { const o = JSON.parse(JSON.stringify(m)); if (o.params && o.params._meta === DEFAULT_META) o.params._meta = metaFor(); return subst.toReal(o); };
  return v.steps.map((s) => ({ ...s, send: fill(s.send) }));
}
async function runVariant(factory, v, subst) {
  const conn = factory(); const steps = [];
  try {
    await conn.start();
    for (const s of materialize(v, subst)) {
      const r = await conn.exchange(s.send, s.waitMs ?? 15000);
      const rec = { send: subst.toPlaceholder(s.send) };
      if (s.send.id !== undefined) rec.response = subst.toPlaceholder(rawOf(r.response));
      if (rec.response && Array.isArray(rec.response.tools)) rec.response = { ...rec.response, tools: rec.response.tools.map((t) => t.name) }; // names only: tools-list.json has them whole
      if (r.notifications?.length) rec.notifications = subst.toPlaceholder(r.notifications);
      if (r.http) rec.http = r.http;
      if (s.pick) rec.pick = s.pick;
      steps.push(rec);
    }
  } catch (e) { steps.push({ $transportError: String(e?.message || e) }); }
  const stderr = conn.stderrText();
  await conn.close().catch(() => {});
  return { name: v.name, about: v.about, ...(v.info ? { info: true } : {}), ...(v.transport ? { transport: v.transport } : {}), steps, ...(stderr.trim() ? { $stderr: subst.toPlaceholder(stderr.trim().split('\n').slice(0, 3).join('\n')) } : {}) };
}

// ---------------------------------------------------------------- fixtures
const MAIN_FIXTURE = {
  name: 'main', topDirs: KNOWN_TOP_DIRS, entries: fixtureEntries,
  mainCases: MAIN_CASES, rootsCases: ROOTS_CASES, initialRoots: INITIAL_ROOTS,
};
// Helpers handed to external fixture modules (fixture.mjs: export default (helpers) => fixture).
const FIXTURE_HELPERS = { path, FIXED_TIME, PNG_1x1, wav, mp3, bytes256, largeText };
// With --profile agentbe, one more file is planted outside the root: its name and content are canaries
// that must never show up in a result (the reference server never sees outside/, so golden data is unaffected).
const AGENTBE_CANARY_ENTRIES = [['outside/agentbe-canary-7c1f/agentbe-canary-7c1f.txt', 'AGENTBE-CANARY-7c1f: this file lives outside the workspace\n']];

async function loadFixture(opts) {
  let spec = opts.fixture;
  if (!spec && opts.compare) {
    const cand = path.join(path.dirname(path.resolve(opts.compare)), 'fixture.mjs');
    if (fs.existsSync(cand)) spec = cand;
  }
  if (!spec || spec === 'main') return MAIN_FIXTURE;
  const file = path.resolve(spec);
  if (!fs.existsSync(file)) throw new Error(`--fixture: no such file ${file} (use "main" or the path of a fixture .mjs)`);
  const mod = await import(pathToFileURL(file).href);
  const fx = typeof mod.default === 'function' ? mod.default(FIXTURE_HELPERS) : mod.default;
  const problems = [];
  if (!fx || typeof fx !== 'object') problems.push('default export is not a fixture object');
  else {
    if (typeof fx.name !== 'string') problems.push('name');
    if (!Array.isArray(fx.topDirs) || !fx.topDirs.includes('root') || !fx.topDirs.includes('outside')) problems.push('topDirs (must include root and outside)');
    if (typeof fx.entries !== 'function') problems.push('entries(base)');
    for (const k of ['mainCases', 'rootsCases', 'initialRoots']) if (!Array.isArray(fx[k])) problems.push(k);
  }
  if (problems.length) throw new Error(`fixture ${file}: bad or missing ${problems.join(', ')}`);
  const names = [...fx.mainCases, ...fx.rootsCases].map((c) => c.name);
  const dup = names.filter((n, i) => names.indexOf(n) !== i);
  if (dup.length) throw new Error(`fixture ${file}: duplicate case names ${[...new Set(dup)].join(', ')}`);
  return { ...fx, source: file };
}

// ---------------------------------------------------------------- placeholders & normalisation
function makeSubst(base) {
  const root = path.join(base, 'root'); const outside = path.join(base, 'outside');
  const fwd = (s) => s.split('<ROOT>').join(root).split('<OUTSIDE>').join(outside).split('<BASE>').join(base);
  const back = (s) => s.split(root).join('<ROOT>').split(outside).join('<OUTSIDE>').split(base).join('<BASE>');
  const mapStrings = (v, f) => Array.isArray(v) ? v.map((x) => mapStrings(x, f))
    : (v && typeof v === 'object') ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, mapStrings(x, f)]))
      : typeof v === 'string' ? f(v) : v;
  return { root, outside, toReal: (v) => mapStrings(v, fwd), toPlaceholder: (v) => mapStrings(v, back), mapStrings };
}
const JS_DATE = /\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{2} -?\d{4,6} \d{2}:\d{2}:\d{2} GMT[+-]\d{4}(?: \([^)]*\))?/g;
function normString(s) {
  // 2.x reports some failures as "chdir '<the server process's working directory>' -> '<dir>'":
  // the working directory is the server's, not the fixture's, so it is not compared.
  let t = s.replace(JS_DATE, '<DATE>').replace(/\.[0-9a-f]{32}\.tmp\b/g, '.<RAND>.tmp').replace(/chdir '[^']*' -> /g, "chdir '<CWD>' -> ");
  if (/^isDirectory: true$/m.test(t)) t = t.replace(/^size: \d+$/m, 'size: <DIRSIZE>');
  return t;
}
function normalize(v) { return makeSubst('/nonexistent').mapStrings(v, normString); }

// ---------------------------------------------------------------- transports (2026-07-28 client)
// A connection sends JSON-RPC messages and hands back, per request, the raw response plus the
// notifications that arrived for it. stdio: one spawned process; everything the server writes is
// read line by line. HTTP: each request is its own POST; the reply is JSON or an SSE stream.
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function withTimeout(p, ms, what) { return Promise.race([p, sleep(ms).then(() => { throw new Error(`timeout: ${what}`); })]); }

class StdioConnection {
  constructor(command, args, env) {
    this.command = command; this.args = args; this.env = env;
    this.waiting = new Map(); this.notifications = []; this.stderrChunks = []; this.exited = null;
  }
  async start() {
    const umask = process.umask(0o022);
    try { this.proc = spawn(this.command, this.args, { env: this.env, cwd: os.tmpdir(), stdio: ['pipe', 'pipe', 'pipe'] }); } finally { process.umask(umask); }
    this.proc.stderr.on('data', (d) => this.stderrChunks.push(d));
    this.proc.on('exit', (code, sig) => { this.exited = { code, sig }; for (const w of this.waiting.values()) w({ $processExited: { code, signal: sig } }); this.waiting.clear(); });
    this.proc.stdin.on('error', () => {});
    let buf = '';
    this.proc.stdout.setEncoding('utf8');
    this.proc.stdout.on('data', (d) => {
      buf += d; let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i); buf = buf.slice(i + 1);
        if (!line.trim()) continue;
        let m; try { m = JSON.parse(line); } catch { this.notifications.push({ $unparsable: line }); continue; }
        if (m && m.id !== undefined && ('result' in m || 'error' in m) && this.waiting.has(m.id)) { const w = this.waiting.get(m.id); this.waiting.delete(m.id); w(m); } else this.notifications.push(m);
      }
    });
    await new Promise((res, rej) => { this.proc.once('spawn', res); this.proc.once('error', rej); });
  }
  stderrText() { return Buffer.concat(this.stderrChunks).toString(); }
  // Sends one message; for a request, waits for its response (or ms) and returns
  // {response, notifications}: the notifications that arrived while it was outstanding.
  async exchange(msg, ms = 15000) {
    const n0 = this.notifications.length;
    const isRequest = msg.id !== undefined && msg.method !== undefined;
    const got = isRequest ? new Promise((res) => this.waiting.set(msg.id, res)) : null;
    if (this.exited) return { response: { $processExited: this.exited }, notifications: [] };
    this.proc.stdin.write(JSON.stringify(msg) + '\n');
    if (!isRequest) { await sleep(200); return { notifications: this.notifications.slice(n0) }; }
    const response = await Promise.race([got, sleep(ms).then(() => ({ $noResponse: true }))]);
    this.waiting.delete(msg.id);
    return { response, notifications: this.notifications.slice(n0) };
  }
  async close() {
    if (!this.proc || this.exited) return;
    this.proc.stdin.end();
    const done = new Promise((r) => this.proc.once('exit', r));
    if (await Promise.race([done.then(() => true), sleep(3000).then(() => false)])) return;
    this.proc.kill('SIGTERM');
    if (await Promise.race([done.then(() => true), sleep(2000).then(() => false)])) return;
    this.proc.kill('SIGKILL'); await done;
  }
}

// Mcp-Name value: plain when it is visible ASCII without leading/trailing blanks and does not look
// like the sentinel, otherwise =?base64?...?= of its UTF-8 bytes.
function headerValue(v) {
  const s = String(v);
  const plain = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(s) && !(s.startsWith('=?base64?') && s.endsWith('?='));
  return plain ? s : `=?base64?${Buffer.from(s, 'utf8').toString('base64')}?=`;
}

class HttpConnection {
  constructor(url, headers) { this.url = url; this.headers = headers; }
  async start() {}
  stderrText() { return ''; }
  // opts.headers: per-exchange header overrides (a value of null drops the header).
  async exchange(msg, ms = 60000, opts = {}) {
    const h = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...this.headers };
    const pv = msg.params?._meta?.['io.modelcontextprotocol/protocolVersion'];
    if (pv !== undefined) h['MCP-Protocol-Version'] = String(pv);
    if (msg.method) h['Mcp-Method'] = msg.method;
    const name = msg.params?.name ?? msg.params?.uri ?? msg.params?.taskId;
    if (name !== undefined && ['tools/call', 'resources/read', 'prompts/get', 'tasks/get', 'tasks/update', 'tasks/cancel'].includes(msg.method)) h['Mcp-Name'] = headerValue(name);
    for (const [k, v] of Object.entries(opts.headers || {})) { for (const hk of Object.keys(h)) if (hk.toLowerCase() === k.toLowerCase()) delete h[hk]; if (v !== null) h[k] = v; }
    const ac = new AbortController(); const timer = setTimeout(() => ac.abort(), ms);
    try {
      const res = await fetch(this.url, { method: 'POST', headers: h, body: JSON.stringify(msg), signal: ac.signal });
      const ct = res.headers.get('content-type') || '';
      const text = await res.text();
      const http = { status: res.status };
      const notifications = []; let response;
      const take = (m) => { if (m && m.id !== undefined && ('result' in m || 'error' in m)) response = m; else notifications.push(m); };
      if (ct.includes('text/event-stream')) {
        for (const ev of text.split(/\r?\n\r?\n/)) {
          const data = ev.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
          if (data) { try { take(JSON.parse(data)); } catch { notifications.push({ $unparsable: data }); } }
        }
      } else if (text.trim()) { try { take(JSON.parse(text)); } catch { http.body = text.slice(0, 500); } }
      if (msg.id === undefined) return { notifications, http };
      return { response: response ?? { $noResponse: true }, notifications, http };
    } catch (e) {
      return { response: { $transportError: String(e?.message || e) }, notifications: [] };
    } finally { clearTimeout(timer); }
  }
  async close() {}
}

function transportFactory(opts, base) {
  if (opts.stdio) {
    const parts = splitCommand(opts.stdio);
    const root = path.join(base, 'root');
    let args = parts.slice(1).map((a) => a.split('{ROOT}').join(root).split('{BASE}').join(base));
    if (!opts.stdio.includes('{ROOT}')) args.push(root);
    const env = { ...process.env, TZ: 'UTC', HOME: root };
    if (/(^|\/)(npx|npm)$/.test(parts[0])) env.npm_config_cache = process.env.npm_config_cache || path.join(os.homedir(), '.npm');
    return () => new StdioConnection(parts[0], args, env);
  }
  if (opts.http) return () => new HttpConnection(opts.http, opts.headers);
  throw new Error('need --stdio or --http');
}

function rawOf(resp) {
  if (!resp) return { $noResponse: true };
  if ('error' in resp) return { $jsonrpcError: resp.error };
  if ('result' in resp) return resp.result;
  return resp; // $noResponse / $processExited / $transportError
}

// A session: a connection whose first message is server/discover (the stdio probe).
async function openSession(factory) {
  const conn = factory();
  let nextId = 0;
  const request = async (method, params = {}, ms) => {
    const msg = { jsonrpc: '2.0', id: ++nextId, method, params: { ...params, _meta: metaFor(params._meta) } };
    return conn.exchange(msg, ms);
  };
  try {
    await conn.start();
    const d = await withTimeout(request('server/discover'), 30000, 'server/discover');
    if (!d.response || !('result' in d.response)) throw new Error(`server/discover failed: ${JSON.stringify(d.response)}`);
    return { conn, request, discoverResult: rawOf(d.response) };
  } catch (e) {
    const err = conn.stderrText().trim();
    await conn.close().catch(() => {});
    throw new Error(`could not open a 2026-07-28 session: ${e?.message || e}${err ? `\nserver stderr:\n${err}` : ''}`);
  }
}

async function callTool(sess, subst, c) {
  const r = await sess.request('tools/call', { name: c.tool, arguments: subst.toReal(c.args) }, 60000);
  return subst.toPlaceholder(rawOf(r.response));
}


// ---------------------------------------------------------------- agentbe profile: workspace semantics
// agent-backend serves ONE workspace root. A relative path resolves under it, an absolute path under
// the root is used as is, any other absolute path is taken as relative to the root (leading '/'
// stripped), and a '..' that escapes the root is rejected. Symlinks are never followed out of the root.
// Cases whose outcome legitimately differs from the reference server because of this are "by design":
// they are not compared with the golden result but checked for the workspace security property.
const within = (root, p) => p === root || p.startsWith(root + '/');
const PATH_KEYS = ['path', 'source', 'destination'];
// arguments that must name an existing entry for the tool to succeed
const NEEDS_EXISTING = {
  read_text_file: ['path'], read_file: ['path'], read_media_file: ['path'], list_directory: ['path'],
  list_directory_with_sizes: ['path'], directory_tree: ['path'], search_files: ['path'], get_file_info: ['path'],
  edit_file: ['path'], move_file: ['source'], read_multiple_files: ['paths'],
};

// Walks an absolute, lexically normalised in-root path component by component, resolving symlinks
// lexically (dangling ones included). escapes: some symlink on the way points outside the root.
function walkPath(root, abs, depth = 0) {
  const rel = path.relative(root, abs);
  if (rel === '') return { exists: true, escapes: false };
  const parts = rel.split(path.sep);
  let cur = root;
  for (let i = 0; i < parts.length; i++) {
    const next = path.join(cur, parts[i]);
    let st;
    try { st = fs.lstatSync(next); } catch { return { exists: false, escapes: false }; }
    if (st.isSymbolicLink()) {
      if (depth > 40) return { exists: false, escapes: false, loop: true };
      const target = path.resolve(cur, fs.readlinkSync(next));
      if (!within(root, target)) return { exists: fs.existsSync(path.join(target, ...parts.slice(i + 1))), escapes: true };
      return walkPath(root, path.join(target, ...parts.slice(i + 1)), depth + 1);
    }
    if (i < parts.length - 1 && !st.isDirectory()) return { exists: false, escapes: false };
    cur = next;
  }
  return { exists: true, escapes: false };
}

// kind: in | escape | transient-escape | outside-abs | symlink-out
function classifyPathAgentbe(root, p) {
  if (typeof p !== 'string') return { kind: 'in' };
  let e = p;
  if (e === '~' || e.startsWith('~/')) e = path.join(root, e.slice(1)); // HOME=<ROOT>
  const official = path.isAbsolute(e) ? path.resolve(e) : path.resolve(root, e);
  const cand = path.isAbsolute(e) ? (within(root, e) ? e : root + '/' + e.replace(/^\/+/, '')) : root + '/' + e;
  const mapped = path.resolve(cand);
  if (!within(root, mapped)) return { kind: 'escape', mapped };
  // '..' that leaves the root on the way but ends inside (e.g. ../root/x): agentbe may reject it
  const rel = path.isAbsolute(e) ? (within(root, e) ? e.slice(root.length) : e) : e;
  let depth = 0; let transient = false;
  for (const part of rel.split('/')) { if (part === '..') { if (--depth < 0) { transient = true; break; } } else if (part && part !== '.') depth++; }
  if (transient) return { kind: 'transient-escape', mapped };
  const walk = walkPath(root, mapped);
  if (!within(root, official) || official !== mapped) return { kind: 'outside-abs', mapped, symlinkOut: walk.escapes };
  if (walk.escapes) return { kind: 'symlink-out', mapped };
  return { kind: 'in', mapped };
}
// how the agentbe-mapped path is shown: <ROOT>/ + the argument as given (placeholders kept), leading '/' dropped
const shownMapped = (arg) => `<ROOT>/${String(arg).replace(/^\/+/, '')}`;
function describePathClass(v, arg) {
  if (v.kind === 'escape') return "'..' escapes the root: must be rejected";
  if (v.kind === 'symlink-out') return 'a symlink on the path leads outside the root';
  if (v.kind === 'transient-escape') return "'..' leaves the root on the way (ends inside): may be rejected";
  if (v.kind === 'outside-abs') return `absolute path outside the root (agentbe: ${shownMapped(arg)})` + (v.symlinkOut ? ', then a symlink out of the root' : '');
  return 'in root';
}

// Static classification of one case on the freshly built fixture. null: compared exactly.
// {whole:true,...}: by design, security checks only. {partial:{...}}: the in-root part is compared exactly.
function classifyCase(root, subst, c) {
  if (!c.tool || !c.args || typeof c.args !== 'object') return null;
  const a = subst.toReal(c.args);
  if (c.tool === 'read_multiple_files') {
    if (!Array.isArray(a.paths)) return null;
    const segs = a.paths.map((p) => classifyPathAgentbe(root, p));
    const idx = segs.map((s, i) => (s.kind !== 'in' ? i : -1)).filter((i) => i >= 0);
    if (!idx.length) return null;
    return { partial: { kind: 'rmf', segs, idx }, reasons: idx.map((i) => `paths[${i}]: ${describePathClass(segs[i], c.args.paths[i])}`) };
  }
  const per = {};
  for (const k of PATH_KEYS) if (k in a) per[k] = classifyPathAgentbe(root, a[k]);
  const bad = Object.entries(per).filter(([, v]) => v.kind !== 'in');
  if (bad.length) return { whole: true, per, reasons: bad.map(([k, v]) => `${k}: ${describePathClass(v, c.args[k])}`) };
  if (c.tool === 'list_directory_with_sizes' && per.path) {
    // sizes come from stat, which follows symlinks: entries that are symlinks out of the root are masked
    let names = [];
    try {
      const dir = fs.realpathSync(per.path.mapped);
      if (within(root, dir)) {
        for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
          if (e.isSymbolicLink() && walkPath(root, path.join(dir, e.name)).escapes) names.push(e.name);
        }
      }
    } catch { names = []; }
    if (names.length) {
      if (a.sortBy === 'size') return { whole: true, per, reasons: [`lists symlinks that lead outside the root (${names.join(', ')}), sorted by size`] };
      return { partial: { kind: 'lds', names }, reasons: [`sizes of symlinks that lead outside the root are masked: ${names.join(', ')}`] };
    }
  }
  return null;
}

// Live checks right before a by-design case runs: does the agentbe-mapped path exist?
function liveExistence(root, cls) {
  const ex = {};
  if (cls?.per) for (const [k, v] of Object.entries(cls.per)) if (v.kind === 'outside-abs') { const w = walkPath(root, v.mapped); ex[k] = w.exists && !w.escapes; }
  if (cls?.partial?.kind === 'rmf') cls.partial.segs.forEach((v, i) => { if (v.kind === 'outside-abs') { const w = walkPath(root, v.mapped); ex[`paths[${i}]`] = w.exists && !w.escapes; } });
  return ex;
}

// Snapshot of everything under BASE except root/: type, mode, size, times, inode, sha256, link target.
function snapshotOutside(base) {
  const snap = new Map();
  (function walk(d, rel) {
    let ents;
    try { ents = fs.readdirSync(d, { withFileTypes: true }); } catch { return; }
    for (const e of ents) {
      if (!rel && (e.name === 'root' || e.name === '.fsgold-base')) continue;
      const r = rel ? `${rel}/${e.name}` : e.name;
      const p = path.join(d, e.name);
      let st;
      try { st = fs.lstatSync(p, { bigint: true }); } catch { continue; }
      const rec = { mode: st.mode.toString(8), size: String(st.size), mtime: String(st.mtimeNs), ctime: String(st.ctimeNs), ino: String(st.ino) };
      if (st.isSymbolicLink()) rec.link = fs.readlinkSync(p);
      else if (st.isFile()) { try { rec.sha256 = crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex'); } catch (err) { rec.sha256 = `unreadable: ${err.code}`; } }
      snap.set(r, rec);
      if (st.isDirectory()) walk(p, r);
    }
  })(base, '');
  return snap;
}
function diffSnapshots(before, after) {
  const show = (r) => (r === 'outside' || r.startsWith('outside/') ? `<OUTSIDE>${r.slice(7)}` : `<BASE>/${r}`);
  const out = [];
  for (const [r, b] of before) {
    const a = after.get(r);
    if (!a) out.push(`deleted ${show(r)}`);
    else { const ch = Object.keys({ ...b, ...a }).filter((k) => b[k] !== a[k]); if (ch.length) out.push(`modified ${show(r)} (${ch.join(', ')})`); }
  }
  for (const r of after.keys()) if (!before.has(r)) out.push(`created ${show(r)}`);
  return out;
}

// Canary strings: the text lines of every file outside the root, the names of entries outside the
// root that exist nowhere in the root, and the first /etc/passwd entry.
function collectCanaries(base) {
  const root = path.join(base, 'root');
  const rootNames = new Set();
  (function walk(d) { for (const e of fs.readdirSync(d, { withFileTypes: true })) { rootNames.add(e.name); if (e.isDirectory()) walk(path.join(d, e.name)); } })(root);
  const content = new Set(); const names = new Set();
  (function walk(d, top) {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (top && (e.name === 'root' || e.name === '.fsgold-base')) continue;
      const p = path.join(d, e.name);
      if (!top && e.name.length >= 6 && !rootNames.has(e.name)) names.add(e.name);
      if (e.isDirectory()) walk(p, false);
      else if (e.isFile()) {
        const buf = fs.readFileSync(p);
        const text = buf.toString('utf8');
        if (buf.includes(0) || text.includes('\uFFFD')) continue;
        for (const line of text.split(/\r?\n/)) { const t = line.trim(); if (t.length >= 6) content.add(t); }
      }
    }
  })(base, true);
  try { const first = fs.readFileSync('/etc/passwd', 'utf8').split('\n')[0]; const m = first.match(/^([^:]+:[^:]*:\d+:\d+):/); if (m) content.add(m[1]); } catch { }
  return { content: [...content], names: [...names] };
}

function resultStrings(v, acc = [], key = '') {
  if (typeof v === 'string') {
    acc.push(v);
    if ((key === 'data' || key === 'blob') && /^[A-Za-z0-9+/=\s]*$/.test(v)) acc.push(Buffer.from(v, 'base64').toString('utf8'));
  } else if (Array.isArray(v)) v.forEach((x) => resultStrings(x, acc, key));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) resultStrings(x, acc, k);
  return acc;
}
// Content canaries count in any result; name canaries only in results that are not errors
// (an error message that names an outside path, e.g. a symlink target, discloses no content).
function findCanaries(canaries, argsJson, result) {
  const strs = resultStrings(result);
  const hits = [];
  const isErr = errorFlag(result) !== 'ok';
  for (const c of [...canaries.content, ...(isErr ? [] : canaries.names)]) {
    if (argsJson.includes(c)) continue; // echoed from the request itself
    if (strs.some((s) => s.includes(c))) hits.push(c);
  }
  return hits;
}

// ---------------------------------------------------------------- runner
async function runAll(opts, fx = MAIN_FIXTURE) {
  let base = opts.base;
  if (!base) {
    if (opts.http) throw new Error('--http needs --base DIR (the server must be rooted at DIR/root)');
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'fsgold-'));
  }
  fs.mkdirSync(base, { recursive: true });
  base = fs.realpathSync(base);
  process.umask(0o022);
  const subst = makeSubst(base);
  const factory = transportFactory(opts, base);
  const out = { cases: [], toolsList: null, discover: null, protocol: [] };
  const ab = opts.profile === 'agentbe';
  const extra = ab ? AGENTBE_CANARY_ENTRIES : [];
  // main session (opens with server/discover)
  buildFixture(base, fx, extra);
  if (ab) out.canaries = collectCanaries(base);
  const s = await openSession(factory);
  out.discover = subst.toPlaceholder(s.discoverResult);
  out.toolsList = subst.toPlaceholder(rawOf((await s.request('tools/list')).response));
  const clsMain = ab ? new Map(fx.mainCases.map((c) => [c.name, classifyCase(subst.root, subst, c)])) : null;
  // agentbe: the by-design cases run after all other cases of the session (in their own order), so that
  // what they legitimately do inside the root (an outside absolute path is a path under the root there)
  // cannot disturb the cases that are compared exactly.
  const deferred = (c) => Boolean(ab && clsMain.get(c.name)?.whole);
  const order = ab ? [...fx.mainCases.filter((c) => !deferred(c)), ...fx.mainCases.filter(deferred)] : fx.mainCases;
  for (const c of order) {
    const rec = { name: c.name, tool: c.tool, args: c.args, ...(c.loose ? { loose: true } : {}), result: null };
    if (ab) {
      const cls = clsMain.get(c.name); const exists = liveExistence(subst.root, cls); const before = snapshotOutside(base);
      rec.result = await callTool(s, subst, c);
      rec.ws = { cls, exists, changes: diffSnapshots(before, snapshotOutside(base)), deferred: deferred(c) };
    } else rec.result = await callTool(s, subst, c);
    out.cases.push(rec);
  }
  const stderrMain = s.conn.stderrText();
  await s.conn.close();

  // scripted protocol exchanges, each on a fresh connection, on a fresh fixture
  if (!opts.skipProtocol) {
    buildFixture(base, fx, extra);
    const kind = opts.http ? 'http' : 'stdio';
    for (const v of PROTOCOL_VARIANTS) {
      if (v.transport && v.transport !== kind) continue;
      out.protocol.push(await runVariant(factory, v, subst));
    }
  }
  out.base = base; out.stderrMain = stderrMain; out.subst = subst;
  return out;
}

// ---------------------------------------------------------------- diffing
function deepDiff(a, b, p = '$', acc = []) {
  if (acc.length >= 20) return acc;
  if (a === b) return acc;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object' || Array.isArray(a) !== Array.isArray(b)) {
    acc.push({ path: p, expected: a, actual: b }); return acc;
  }
  if (Array.isArray(a)) {
    if (a.length !== b.length) acc.push({ path: `${p}.length`, expected: a.length, actual: b.length });
    for (let i = 0; i < Math.min(a.length, b.length); i++) deepDiff(a[i], b[i], `${p}[${i}]`, acc);
    return acc;
  }
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
  for (const k of keys) {
    if (!(k in a)) acc.push({ path: `${p}.${k}`, expected: '<absent>', actual: b[k] });
    else if (!(k in b)) acc.push({ path: `${p}.${k}`, expected: a[k], actual: '<absent>' });
    else deepDiff(a[k], b[k], `${p}.${k}`, acc);
  }
  return acc;
}
function showVal(v) { const s = typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v); return s && s.length > 300 ? s.slice(0, 300) + '…' : s; }
function describeDiff(d) {
  if (typeof d.expected === 'string' && typeof d.actual === 'string') {
    const el = d.expected.split('\n'); const al = d.actual.split('\n');
    let i = 0; while (i < el.length && i < al.length && el[i] === al[i]) i++;
    return `${d.path}: first difference at line ${i + 1}\n        expected: ${showVal(el[i] ?? '<end>')}\n        actual:   ${showVal(al[i] ?? '<end>')}` +
      (el.length !== al.length ? `\n        (lines: expected ${el.length}, actual ${al.length})` : '');
  }
  return `${d.path}: expected ${showVal(d.expected)}, actual ${showVal(d.actual)}`;
}
function errorFlag(r) { return r && typeof r === 'object' ? (r.$jsonrpcError ? 'jsonrpc-error' : r.isError === true ? 'isError' : 'ok') : 'ok'; }

async function compareOfficial(opts, fx) {
  const goldenPath = path.resolve(opts.compare);
  const golden = JSON.parse(fs.readFileSync(goldenPath, 'utf8'));
  const dir = path.dirname(goldenPath);
  const tl = fs.existsSync(path.join(dir, 'tools-list.json')) ? JSON.parse(fs.readFileSync(path.join(dir, 'tools-list.json'), 'utf8')) : null;
  const disc = fs.existsSync(path.join(dir, 'discover.json')) ? JSON.parse(fs.readFileSync(path.join(dir, 'discover.json'), 'utf8')) : null;
  if (fx !== MAIN_FIXTURE) console.log(`fixture: ${fx.name} (${fx.source})`);
  const actual = await runAll(opts, fx);
  const byName = new Map(actual.cases.map((c) => [c.name, c]));
  let mismatches = 0; let loose = 0; let ok = 0; let missing = 0;
  const lines = [];
  const perTool = new Map();
  const tally = (g, k) => { const key = g.tool || g.action; const t = perTool.get(key) || { ok: 0, mismatch: 0, loose: 0, missing: 0 }; t[k]++; perTool.set(key, t); };
  for (const g of golden) {
    if (opts.only && !opts.only.test(g.name)) continue;
    const a = byName.get(g.name);
    if (!a) { missing++; tally(g, 'missing'); lines.push(`MISSING   ${g.name} (not run: session skipped?)`); continue; }
    const diffs = deepDiff(normalize(g.result), normalize(a.result));
    if (diffs.length === 0) { ok++; tally(g, 'ok'); if (opts.verbose) lines.push(`ok        ${g.name}`); continue; }
    if (g.loose && errorFlag(g.result) === errorFlag(a.result)) { loose++; tally(g, 'loose'); lines.push(`LOOSE     ${g.name} (text differs, error kind matches: ${errorFlag(g.result)})`); continue; }
    mismatches++; tally(g, 'mismatch');
    lines.push(`MISMATCH  ${g.name}  [${g.tool || g.action}] ${JSON.stringify(g.args ?? g.roots)}`);
    for (const d of diffs.slice(0, 5)) lines.push('      ' + describeDiff(d));
    if (opts.verbose) lines.push('      expected: ' + JSON.stringify(g.result) + '\n      actual:   ' + JSON.stringify(a.result));
  }
  if (tl && !opts.only) {
    const diffs = deepDiff(normalize(tl), normalize(actual.toolsList));
    if (diffs.length) { mismatches++; lines.push('MISMATCH  tools/list'); for (const d of diffs.slice(0, 15)) lines.push('      ' + describeDiff(d)); } else ok++;
  }
  if (disc && !opts.only) {
    const diffs = deepDiff(normalize(disc.default), normalize(actual.discover));
    if (diffs.length) { mismatches++; lines.push('MISMATCH  server/discover'); for (const d of diffs.slice(0, 10)) lines.push('      ' + describeDiff(d)); } else ok++;
    if (disc.protocolVariants && !opts.skipProtocol) {
      for (const v of disc.protocolVariants) {
        const av = actual.protocol.find((x) => x.name === v.name);
        if (!av) { if (!v.transport || v.transport === (opts.http ? 'http' : 'stdio')) { missing++; lines.push(`MISSING   protocol variant ${v.name}`); } continue; }
        const strip = (steps) => steps.map(({ http, ...st }) => st);
        const diffs = deepDiff(normalize(strip(v.steps)), normalize(strip(av.steps)));
        if (diffs.length) { mismatches++; lines.push(`MISMATCH  protocol variant ${v.name} (${v.about})`); for (const d of diffs.slice(0, 5)) lines.push('      ' + describeDiff(d)); } else { ok++; if (opts.verbose) lines.push(`ok        protocol variant ${v.name}`); }
      }
    }
  }
  console.log(lines.join('\n'));
  console.log('\nper tool (ok / mismatch / loose-diff / missing):');
  for (const [k, t] of perTool) console.log(`  ${k.padEnd(28)} ${t.ok} / ${t.mismatch} / ${t.loose} / ${t.missing}`);
  console.log(`\nfixture base: ${actual.base}`);
  console.log(`summary: ${ok} ok, ${mismatches} mismatched, ${loose} loose-diff, ${missing} missing`);
  return mismatches + missing > 0 ? 1 : 0;
}


// ---------------------------------------------------------------- agentbe profile: compare
// Input-schema structure: descriptions, titles and $schema dropped; required sorted; an object schema
// without properties/required is the same as one with {} / [].
function schemaShape(s) {
  if (Array.isArray(s)) return s.map(schemaShape);
  if (!s || typeof s !== 'object') return s;
  const o = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === 'description' || k === 'title' || k === '$schema') continue;
    if (k === 'properties' && v && typeof v === 'object' && !Array.isArray(v)) o[k] = Object.fromEntries(Object.entries(v).map(([pn, pv]) => [pn, schemaShape(pv)]));
    else if (k === 'required' && Array.isArray(v)) o[k] = [...v].sort();
    else if (['items', 'additionalProperties', 'not', 'anyOf', 'oneOf', 'allOf', 'prefixItems'].includes(k)) o[k] = schemaShape(v);
    else o[k] = v; // type, enum, default, minItems, ... compared verbatim
  }
  if (o.type === 'object') { if (!('properties' in o)) o.properties = {}; if (!('required' in o)) o.required = []; }
  return o;
}

function compareToolsAgentbe(gold, act) {
  const mism = []; const notes = [];
  const gt = Array.isArray(gold?.tools) ? gold.tools : [];
  if (!act || !Array.isArray(act.tools)) { mism.push(`no tools array in the tools/list result: ${showVal(act)}`); return { mism, notes }; }
  const at = act.tools;
  const aNames = at.map((t) => t.name);
  const dups = aNames.filter((n, i) => aNames.indexOf(n) !== i);
  if (dups.length) mism.push(`duplicate tool names: ${[...new Set(dups)].join(', ')}`);
  const gBy = new Map(gt.map((t) => [t.name, t])); const aBy = new Map(at.map((t) => [t.name, t]));
  for (const n of gBy.keys()) if (!aBy.has(n)) mism.push(`missing tool: ${n}`);
  for (const n of aBy.keys()) if (!gBy.has(n) && n !== 'exec' && n !== 'grep') mism.push(`extra tool: ${n}`); // ours: exec and grep beside the official tools
  const ann = (x) => { const o = { ...(x && typeof x === 'object' ? x : {}) }; delete o.title; return o; };
  const outDiff = []; const execDiff = [];
  for (const [n, g] of gBy) {
    const a = aBy.get(n); if (!a) continue;
    for (const d of deepDiff(schemaShape(g.inputSchema ?? {}), schemaShape(a.inputSchema ?? {}), `$.${n}.inputSchema`)) mism.push(describeDiff(d));
    for (const d of deepDiff(ann(g.annotations), ann(a.annotations), `$.${n}.annotations`)) mism.push(describeDiff(d));
    if (JSON.stringify(schemaShape(g.outputSchema ?? null)) !== JSON.stringify(schemaShape(a.outputSchema ?? null))) outDiff.push(n);
    if (JSON.stringify(g.execution ?? null) !== JSON.stringify(a.execution ?? null)) execDiff.push(n);
  }
  if (outDiff.length) notes.push(`outputSchema differs from the reference (not compared) for: ${outDiff.join(', ')}`);
  if (execDiff.length) notes.push(`execution differs from the reference ${JSON.stringify(gt[0]?.execution ?? null)} (not compared) for: ${execDiff.join(', ')}`);
  const ex = aBy.get('exec');
  if (ex) {
    const s = ex.inputSchema || {}; const req = Array.isArray(s.required) ? s.required : []; const props = s.properties || {};
    if (s.type !== 'object') mism.push(`exec: inputSchema.type is ${JSON.stringify(s.type)}, expected "object"`);
    if (props.command?.type !== 'string') mism.push(`exec: properties.command.type is ${JSON.stringify(props.command?.type)}, expected "string"`);
    if (!req.includes('command')) mism.push('exec: "command" is not required');
    if (!props.env) mism.push('exec: no "env" property');
    else if (props.env.type !== 'object') mism.push(`exec: properties.env.type is ${JSON.stringify(props.env.type)}, expected "object"`);
    if (req.includes('env')) mism.push('exec: "env" must be optional');
    const other = Object.keys(props).filter((k) => k !== 'command' && k !== 'env');
    if (other.length) notes.push(`exec: further input properties ${other.join(', ')}`);
  } else notes.push('no exec tool listed');
  const order = aNames.filter((n) => gBy.has(n)); const gOrder = gt.map((t) => t.name).filter((n) => aBy.has(n));
  if (JSON.stringify(order) !== JSON.stringify(gOrder)) notes.push(`tool order differs from the reference (not compared): ${aNames.join(', ')}`);
  return { mism, notes };
}

// Security property of one case (agentbe profile). Returns a list of problems (empty = holds).
function securityProblems(actual, c, a) {
  const probs = []; const ws = a.ws;
  if (!ws) return probs;
  if (ws.changes.length) probs.push(`outside the root changed: ${ws.changes.slice(0, 5).join('; ')}${ws.changes.length > 5 ? ` (+${ws.changes.length - 5} more)` : ''}`);
  const cls = ws.cls;
  if (!cls) return probs;
  const hits = findCanaries(actual.canaries, JSON.stringify(c.args ?? {}), a.result);
  if (hits.length) probs.push(`outside content in the result: ${hits.slice(0, 3).map((h) => JSON.stringify(h)).join(', ')}`);
  const isErr = errorFlag(a.result) !== 'ok';
  if (cls.per) {
    for (const [k, v] of Object.entries(cls.per)) {
      if (v.kind === 'escape' && !isErr) probs.push(`${k}: '..' escapes the root, expected an error`);
      if ((v.kind === 'symlink-out' || v.symlinkOut) && c.tool === 'get_file_info' && !isErr) probs.push(`${k}: get_file_info through a symlink out of the root must fail`);
      if (v.kind === 'outside-abs' && (NEEDS_EXISTING[c.tool] || []).includes(k) && ws.exists[k] === false && !isErr) probs.push(`${k}: the agentbe path ${shownMapped(c.args[k])} does not exist, expected an error`);
    }
  }
  if (cls.roots && c.tool === 'list_allowed_directories' && !isErr) {
    const text = a.result?.content?.[0]?.text ?? '';
    const bad = text.split('\n').slice(1).filter((d) => d && !(d === '<ROOT>' || d.startsWith('<ROOT>/')));
    if (bad.length) probs.push(`allowed directories outside the root: ${bad.join(', ')}`);
  }
  return probs;
}

// Partial cases: mask the by-design parts in both expected and actual, check those parts for security.
function maskPartial(p, c, a, ge, ae, probs) {
  const onTexts = (r, f) => {
    if (!r || typeof r !== 'object' || r.isError) return r;
    const o = JSON.parse(JSON.stringify(r));
    if (Array.isArray(o.content)) for (const it of o.content) if (it && typeof it.text === 'string') it.text = f(it.text);
    if (o.structuredContent && typeof o.structuredContent.content === 'string') o.structuredContent.content = f(o.structuredContent.content);
    return o;
  };
  if (p.kind === 'rmf') {
    let checked = false;
    const mask = (isActual) => (t) => {
      const segs = t.split('\n---\n');
      if (segs.length !== p.segs.length) return t;
      for (const i of p.idx) {
        if (isActual && !checked) {
          const v = p.segs[i]; const segErr = segs[i].includes(': Error - ');
          if (v.kind === 'escape' && !segErr) probs.push(`paths[${i}]: '..' escapes the root, expected an error entry`);
          if (v.kind === 'outside-abs' && a.ws.exists[`paths[${i}]`] === false && !segErr) probs.push(`paths[${i}]: the agentbe path does not exist, expected an error entry`);
        }
        segs[i] = `<WORKSPACE ${JSON.stringify(c.args.paths[i])}>`;
      }
      if (isActual) checked = true;
      return segs.join('\n---\n');
    };
    return { ge: onTexts(ge, mask(false)), ae: onTexts(ae, mask(true)) };
  }
  if (p.kind === 'lds') {
    const mask = (t) => t.split('\n').map((line) => {
      for (const n of p.names) { const pre = `[FILE] ${n.padEnd(30)} `; if (line.startsWith(pre)) return `${pre}<MASKED>`; }
      return line.startsWith('Combined size: ') ? 'Combined size: <MASKED>' : line;
    }).join('\n');
    return { ge: onTexts(ge, mask), ae: onTexts(ae, mask) };
  }
  return { ge, ae };
}

// ---------------------------------------------------------------- agentbe profile: 2026-07-28 specifics
const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
// The serverInfo a result carries in _meta names the implementation: not compared in the agentbe profile.
function stripServerInfo(r) {
  if (!r || typeof r !== 'object' || !r._meta || typeof r._meta !== 'object') return r;
  const o = { ...r, _meta: { ...r._meta } }; delete o._meta[SERVER_INFO];
  if (Object.keys(o._meta).length === 0) delete o._meta;
  return o;
}
const HTTP_STATUS_FOR_CODE = { '-32020': 400, '-32021': 400, '-32022': 400, '-32601': 404 };
// One protocol variant: per step, an error must have the golden code and data (the message is free);
// a result must agree on the picked fields (resultType by default); a step without
// io.modelcontextprotocol/logLevel must bring no notifications/message. Over HTTP, the status must
// fit the answer to a request with the 2026-07-28 _meta (errors -32020/-32021/-32022 -> 400,
// -32601 -> 404, -32602 for a bad _meta -> 400, a result -> 200).
function compareVariantAgentbe(g, a) {
  const probs = [];
  if (a.steps.length !== g.steps.length) probs.push(`steps: expected ${g.steps.length}, actual ${a.steps.length}${a.steps.at(-1)?.$transportError ? ` (${a.steps.at(-1).$transportError})` : ''}`);
  for (let i = 0; i < Math.min(g.steps.length, a.steps.length); i++) {
    const gs = g.steps[i]; const as = a.steps[i]; const what = `step ${i + 1} ${gs.send?.method}`;
    if (!('response' in gs)) continue;
    const ge = gs.response?.$jsonrpcError; const ae = as.response?.$jsonrpcError;
    if (ge || ae) {
      if (!ge || !ae) probs.push(`${what}: expected ${showVal(ge ? { error: ge.code } : gs.response)}, actual ${showVal(ae ? { error: ae, } : as.response)}`);
      else {
        if (ge.code !== ae.code) probs.push(`${what}: error code expected ${ge.code}, actual ${ae.code} (${showVal(ae.message)})`);
        if (ge.code === -32022) { // data.requested as sent; data.supported must offer 2026-07-28 (a dual-era server may list more)
          if (ae.data?.requested !== ge.data?.requested) probs.push(`${what}: error data.requested expected ${showVal(ge.data?.requested)}, actual ${showVal(ae.data?.requested)}`);
          if (!Array.isArray(ae.data?.supported) || !ae.data.supported.includes(PROTOCOL_VERSION)) probs.push(`${what}: error data.supported ${showVal(ae.data?.supported)} lacks ${PROTOCOL_VERSION}`);
        } else if (ge.code === -32602) { /* the reference's data (validation detail) is its own */ }
        else if (JSON.stringify(ge.data ?? null) !== JSON.stringify(ae.data ?? null) && ge.data !== undefined) probs.push(`${what}: error data expected ${showVal(ge.data)}, actual ${showVal(ae.data)}`);
      }
    } else if (gs.response && typeof gs.response === 'object' && !gs.response.$noResponse) {
      for (const k of gs.pick ?? ['resultType']) {
        const ev = normalize(gs.response?.[k]); const av = normalize(as.response?.[k]);
        if (JSON.stringify(ev) !== JSON.stringify(av)) probs.push(`${what}: ${k} expected ${showVal(ev)}, actual ${showVal(av)}`);
      }
    } else if (JSON.stringify(gs.response) !== JSON.stringify(as.response)) probs.push(`${what}: expected ${showVal(gs.response)}, actual ${showVal(as.response)}`);
    const hasLevel = gs.send?.params?._meta?.['io.modelcontextprotocol/logLevel'] !== undefined;
    if (!hasLevel && (as.notifications || []).some((n) => n?.method === 'notifications/message')) probs.push(`${what}: notifications/message without io.modelcontextprotocol/logLevel`);
    const modern = gs.send?.params?._meta?.['io.modelcontextprotocol/protocolVersion'] !== undefined;
    if (as.http && modern) {
      const code = ae?.code; const want = code !== undefined ? (HTTP_STATUS_FOR_CODE[String(code)] ?? (code === -32602 && /_meta|envelope/i.test(ae.message || '') ? 400 : undefined)) : 200;
      if (want !== undefined && as.http.status !== want) probs.push(`${what}: HTTP status ${as.http.status}, expected ${want}`);
    }
  }
  return probs;
}
// tools/list in the 2026-07-28 era: the cache hints and resultType as the reference, and the
// reference's $schema on every inputSchema and outputSchema.
function compareToolsListModern(gold, act) {
  const mism = [];
  for (const k of ['resultType', 'ttlMs', 'cacheScope']) if (JSON.stringify(gold?.[k]) !== JSON.stringify(act?.[k])) mism.push(`${k}: expected ${showVal(gold?.[k])}, actual ${showVal(act?.[k])}`);
  const want = gold?.tools?.[0]?.inputSchema?.$schema;
  if (want) for (const t of act?.tools || []) {
    if (t.inputSchema?.$schema !== want) mism.push(`${t.name}: inputSchema.$schema ${showVal(t.inputSchema?.$schema)}, expected ${showVal(want)}`);
    if (t.outputSchema && t.outputSchema.$schema !== want) mism.push(`${t.name}: outputSchema.$schema ${showVal(t.outputSchema.$schema)}, expected ${showVal(want)}`);
  }
  return mism;
}

async function compareAgentbe(opts, fx) {
  const goldenPath = path.resolve(opts.compare);
  const golden = JSON.parse(fs.readFileSync(goldenPath, 'utf8'));
  const dir = path.dirname(goldenPath);
  const tl = fs.existsSync(path.join(dir, 'tools-list.json')) ? JSON.parse(fs.readFileSync(path.join(dir, 'tools-list.json'), 'utf8')) : null;
  const disc = fs.existsSync(path.join(dir, 'discover.json')) ? JSON.parse(fs.readFileSync(path.join(dir, 'discover.json'), 'utf8')) : null;
  const actual = await runAll(opts, fx);
  const byName = new Map(actual.cases.map((c) => [c.name, c]));
  const n = { ok: 0, mismatch: 0, loose: 0, missing: 0, wsPass: 0, wsFail: 0 };
  const lines = []; const notes = [];
  const perTool = new Map();
  const tally = (g, k) => { const key = g.tool || g.action; const t = perTool.get(key) || { ok: 0, mismatch: 0, loose: 0, missing: 0, wsPass: 0, wsFail: 0 }; t[k]++; perTool.set(key, t); n[k]++; };
  let byDesign = 0;
  console.log(`profile: agentbe   fixture: ${fx.name}${fx.source ? ` (${fx.source})` : ''}`);
  console.log('(by-design cases run after the exactly compared ones of their session; WORKSPACE lines list them all)');
  for (const g of golden) {
    if (opts.only && !opts.only.test(g.name)) continue;
    const a = byName.get(g.name);
    if (!a) { tally(g, 'missing'); lines.push(`MISSING   ${g.name} (not run: session skipped?)`); continue; }
    const label = `${g.name}  [${g.tool || g.action}]`;
    if (g.session === 'roots' && !g.tool) { // roots handshake steps: informational
      byDesign++; tally(g, 'wsPass');
      lines.push(`WORKSPACE pass  ${label} roots step, informational (rootsListRequested=${a.result?.rootsListRequested})`);
      continue;
    }
    const cls = a.ws?.cls ?? null;
    const probs = securityProblems(actual, g, a);
    if (cls?.whole) {
      byDesign++;
      const got = errorFlag(a.result) === 'ok' ? 'ok result' : errorFlag(a.result);
      if (probs.length) { tally(g, 'wsFail'); lines.push(`WORKSPACE FAIL  ${label} ${cls.reasons.join('; ')}`); for (const p of probs) lines.push(`      ${p}`); }
      else { tally(g, 'wsPass'); lines.push(`WORKSPACE pass  ${label} ${cls.reasons.join('; ')} -> ${got}`); }
      if (opts.verbose) lines.push('      actual:   ' + JSON.stringify(a.result));
      continue;
    }
    let ge = normalize(stripServerInfo(g.result)); let ae = normalize(stripServerInfo(a.result));
    if (cls?.partial) { byDesign++; ({ ge, ae } = maskPartial(cls.partial, g, a, ge, ae, probs)); }
    const diffs = deepDiff(ge, ae);
    if (diffs.length === 0 || (g.loose && errorFlag(g.result) === errorFlag(a.result))) {
      if (probs.length) { tally(g, 'wsFail'); lines.push(`WORKSPACE FAIL  ${label} ${cls ? cls.reasons.join('; ') : 'in-root case'}`); for (const p of probs) lines.push(`      ${p}`); continue; }
      if (cls?.partial) { tally(g, 'wsPass'); lines.push(`WORKSPACE pass  ${label} partial: ${cls.reasons.join('; ')}; the rest matches`); continue; }
      if (diffs.length === 0) { tally(g, 'ok'); if (opts.verbose) lines.push(`ok        ${g.name}`); continue; }
      tally(g, 'loose'); lines.push(`LOOSE     ${g.name} (text differs, error kind matches: ${errorFlag(g.result)})`); continue;
    }
    tally(g, 'mismatch');
    lines.push(`MISMATCH  ${label} ${JSON.stringify(g.args ?? g.roots)}${cls?.partial ? `  (partial: ${cls.reasons.join('; ')})` : ''}`);
    for (const d of diffs.slice(0, 5)) lines.push('      ' + describeDiff(d));
    for (const p of probs) lines.push(`      WORKSPACE: ${p}`);
    if (probs.length) n.wsFail++;
    if (opts.verbose) lines.push('      expected: ' + JSON.stringify(g.result) + '\n      actual:   ' + JSON.stringify(a.result));
  }
  if (tl && !opts.only) {
    const r = compareToolsAgentbe(tl, actual.toolsList);
    r.mism.push(...compareToolsListModern(tl, actual.toolsList));
    if (r.mism.length) { n.mismatch++; lines.push('MISMATCH  tools/list'); for (const m of r.mism.slice(0, 25)) lines.push('      ' + m); if (r.mism.length > 25) lines.push(`      (+${r.mism.length - 25} more)`); } else n.ok++;
    for (const x of r.notes) notes.push(`tools/list: ${x}`);
  }
  if (disc && !opts.only) {
    const g = disc.default || {}; const a = actual.discover || {};
    const im = [];
    if (!Array.isArray(a.supportedVersions) || !a.supportedVersions.includes(PROTOCOL_VERSION)) im.push(`supportedVersions ${showVal(a.supportedVersions)} lacks ${PROTOCOL_VERSION}`);
    for (const k of ['resultType', 'ttlMs', 'cacheScope']) if (JSON.stringify(g[k]) !== JSON.stringify(a[k])) im.push(`${k}: expected ${showVal(g[k])}, actual ${showVal(a[k])}`);
    if (!a.capabilities || typeof a.capabilities.tools !== 'object' || a.capabilities.tools === null) im.push(`capabilities.tools missing: capabilities ${showVal(a.capabilities)}`);
    if (im.length) { n.mismatch++; lines.push('MISMATCH  server/discover'); for (const m of im) lines.push('      ' + m); } else n.ok++;
    notes.push(`server/discover: supportedVersions ${JSON.stringify(a.supportedVersions)}, capabilities ${JSON.stringify(a.capabilities)}, serverInfo ${JSON.stringify(a._meta?.['io.modelcontextprotocol/serverInfo'])} (not compared)`);
    if (disc.protocolVariants && !opts.skipProtocol) {
      for (const v of disc.protocolVariants) {
        const av = actual.protocol.find((x) => x.name === v.name);
        if (!av) { if (!v.transport || v.transport === (opts.http ? 'http' : 'stdio')) { n.missing++; lines.push(`MISSING   protocol variant ${v.name}`); } continue; }
        const probs = compareVariantAgentbe(v, av);
        if (probs.length && v.info) { notes.push(`protocol variant ${v.name} (informational: ${v.about}) differs from the reference: ${probs.join('; ')}`); continue; }
        if (probs.length) { n.mismatch++; lines.push(`MISMATCH  protocol variant ${v.name} (${v.about})`); for (const p of probs.slice(0, 8)) lines.push('      ' + p); } else { n.ok++; if (opts.verbose) lines.push(`ok        protocol variant ${v.name}`); }
      }
    }
  }
  console.log(lines.join('\n'));
  if (notes.length) console.log('\nnotes (not counted):\n' + notes.map((x) => '  ' + x).join('\n'));
  console.log('\nper tool (ok / mismatch / loose-diff / missing / workspace pass / workspace FAIL):');
  for (const [k, t] of perTool) console.log(`  ${k.padEnd(28)} ${t.ok} / ${t.mismatch} / ${t.loose} / ${t.missing} / ${t.wsPass} / ${t.wsFail}`);
  console.log(`\nby-design (WORKSPACE) cases: ${byDesign}`);
  console.log(`fixture base: ${actual.base}`);
  console.log(`summary: ${n.ok} ok, ${n.mismatch} mismatched, ${n.loose} loose-diff, ${n.missing} missing, ${n.wsPass} workspace pass, ${n.wsFail} workspace FAIL`);
  return n.mismatch + n.missing + n.wsFail > 0 ? 1 : 0;
}

// --list-workspace: the static by-design classification on a freshly built fixture, no server.
async function listWorkspace(opts, fx) {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'fsgold-list-')));
  try {
    process.umask(0o022);
    buildFixture(base, fx, AGENTBE_CANARY_ENTRIES);
    const subst = makeSubst(base);
    let count = 0;
    console.log(`fixture: ${fx.name}${fx.source ? ` (${fx.source})` : ''}; cases the agentbe profile checks for the workspace property instead of comparing:`);
    for (const c of fx.mainCases) {
      const cls = classifyCase(subst.root, subst, c);
      if (!cls) continue;
      count++;
      console.log(`  ${cls.partial ? 'partial' : 'whole  '}  ${c.name.padEnd(40)} [${c.tool}] ${cls.reasons.join('; ')}`);
    }
    console.log(`by-design cases: ${count} (the 2026-07-28 harness runs no roots session)`);
  } finally { fs.rmSync(base, { recursive: true, force: true }); }
  return 0;
}

async function capture(opts, fx) {
  if (!opts.out) throw new Error('--capture needs --out DIR');
  const res = await runAll(opts, fx);
  fs.mkdirSync(opts.out, { recursive: true });
  fs.writeFileSync(path.join(opts.out, 'golden.json'), JSON.stringify(res.cases, null, 2) + '\n');
  fs.writeFileSync(path.join(opts.out, 'tools-list.json'), JSON.stringify(res.toolsList, null, 2) + '\n');
  fs.writeFileSync(path.join(opts.out, 'discover.json'), JSON.stringify({ default: res.discover, protocolVariants: res.protocol }, null, 2) + '\n');
  console.log(`captured ${res.cases.length} cases (fixture ${fx.name}) from fixture ${res.base} into ${opts.out}`);
  if (res.stderrMain) console.log('server stderr (main session):\n' + res.stderrMain.trim());
  return 0;
}

// golden.json must come from the fixture that is about to be built
function checkGoldenFixture(opts, fx) {
  const golden = JSON.parse(fs.readFileSync(path.resolve(opts.compare), 'utf8'));
  const known = new Set([...fx.mainCases, ...fx.rootsCases].map((c) => c.name));
  const names = golden.filter((g) => !g.action).map((g) => g.name);
  const hit = names.filter((x) => known.has(x)).length;
  if (names.length && hit < names.length / 2) throw new Error(`${opts.compare} does not belong to fixture "${fx.name}" (${hit}/${names.length} case names known); pass the right --fixture`);
}

// ---------------------------------------------------------------- main
const opts = parseArgs(process.argv.slice(2));
if (opts.help || (!opts.capture && !opts.compare && !opts.listWorkspace)) {
  const text = fs.readFileSync(new URL(import.meta.url), 'utf8').split('\n');
  const head = []; for (const l of text.slice(1)) { if (!l.startsWith('//')) break; head.push(l.slice(3)); }
  console.log(head.join('\n'));
  process.exit(opts.help ? 0 : 2);
}
try {
  const fx = await loadFixture(opts);
  let code;
  if (opts.listWorkspace) code = await listWorkspace(opts, fx);
  else if (opts.compare) { checkGoldenFixture(opts, fx); code = opts.profile === 'agentbe' ? await compareAgentbe(opts, fx) : await compareOfficial(opts, fx); }
  else code = await capture(opts, fx);
  process.exit(code);
} catch (e) {
  console.error('error:', e?.stack || e);
  process.exit(2);
}
