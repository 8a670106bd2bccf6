// The grep corpus: a tree and the tool calls made against it.
//
// The tree lives under a base directory BASE: BASE/root is the workspace the
// server is rooted on, BASE/outside is a canary directory beside it that no
// call may ever reach. capture.mjs builds it, runs every case through the
// reference's `grep` MCP tool and writes reference.json, which carries this
// tree and these cases together with what the reference answered.
//
// Tree entries (paths relative to BASE, always '/'-separated):
//   {path, kind: 'dir'}
//   {path, kind: 'file', text}                       UTF-8 text
//   {path, kind: 'file', parts: [{text|b64, repeat}]} concatenated parts, each
//                                                     repeated `repeat` times (default 1)
//   {path, kind: 'symlink', target}                  target written verbatim
// Parent directories are created as needed; entries are created in order.
//
// Case arguments may contain the placeholders <ROOT> (BASE/root) and
// <OUTSIDE> (BASE/outside); they are substituted before the call.

const f = (path, text) => ({ path, kind: 'file', text });
const parts = (path, ...p) => ({ path, kind: 'file', parts: p });
const dir = (path) => ({ path, kind: 'dir' });
const link = (path, target) => ({ path, kind: 'symlink', target });
const r = (p) => 'root/' + p;

const ctxLines = [];
for (let i = 1; i <= 20; i++) {
  ctxLines.push([3, 5, 12, 20].includes(i) ? `match ${i}` : `line ${i}`);
}

const hlLines = [];
for (let i = 1; i <= 10; i++) hlLines.push(`foo ${i}`);

export const tree = [
  // Canary outside the workspace.
  f('outside/secret.txt', 'foo secret outside the workspace\n'),
  f('outside/sub/deep.txt', 'foo deep outside\n'),

  // A global gitignore: the reference runs rg with HOME set to the workspace
  // root, so rg reads $HOME/.config/git/ignore (applied inside git repos only).
  f(r('.config/git/ignore'), '*.globalignored\n'),
  // The workspace root is not a repository: its .gitignore applies nowhere,
  // not even inside repo/ (gitignore rules stop at the enclosing repo's root).
  f(r('.gitignore'), '*.rootgitignored\n'),

  // basic: plain text.
  f(r('basic/a.txt'), 'foo\nbar\nfoo bar\n'),
  f(r('basic/b.md'), '# Foo\nfoo\n'),
  f(r('basic/sub/c.txt'), 'nothing here\n'),
  f(r('basic/sub/d.txt'), 'food\n'),
  f(r('basic/with space.txt'), 'foo in a name with a space\n'),
  f(r('basic/ünï.txt'), 'foo ünï\n'),
  f(r('basic/dash.txt'), '--flag -foo\n'),
  f(r('basic/quote.txt'), "it's here\n$HOME and `cmd`\n"),
  f(r('basic/triple.txt'), 'foo foo foo\nnone\nfoo\n'),
  f(r('basic/empty.txt'), ''),

  // unicode: classes, boundaries and case folding.
  f(r('unicode/u.txt'), [
    'café',
    'CAFÉ',
    'Σίσυφος',
    'σίσυφος',
    'arabic ٣',
    'ascii 3',
    'straße',
    'STRASSE',
    'Kelvin \u212A',
    'kelvin k',
    'emoji 🎉 x',
    '\u00a0nbsp first',
    'tab\tsep',
    'greek αβγ',
  ].join('\n') + '\n'),

  // crlf, long lines, no trailing newline, trailing whitespace.
  f(r('crlf/a.txt'), 'foo\r\nbar\r\nfoo end\r\n'),
  f(r('long/a.txt'), 'x'.repeat(2500) + 'foo' + 'y'.repeat(2500) + '\nshort foo\n'),
  f(r('nonl/a.txt'), 'first\nfoo last'),
  f(r('ws/a.txt'), '  foo leading\nfoo trailing   \n\tfoo tab\nfoo end  \t \n'),

  // context.
  f(r('ctx/a.txt'), ctxLines.join('\n') + '\n'),
  f(r('ctx/b.txt'), 'match one\nx\nx\nx\nx\nx\nmatch seven\n'),

  // multiline.
  f(r('ml/a.txt'), 'start\nmiddle\nend\nstart again\nfinish\n'),
  f(r('ml/b.txt'), 'alpha\nbeta\nalpha\ngamma\n'),
  f(r('ml/c.txt'), 'x1\nx2\nx3\nx4\n'),

  // repo: a git repository with layered ignore files.
  dir(r('repo/.git')),
  f(r('repo/.git/HEAD'), 'ref: refs/heads/main\n'),
  f(r('repo/.git/config'), '[core]\n\tfoo = bar\n'),
  f(r('repo/.git/info/exclude'), '# local excludes\nexcluded-by-info.txt\n'),
  f(r('repo/.gitignore'), [
    '# comment line',
    '*.log',
    '!keep.log',
    'build/',
    '/rootonly.txt',
    'ignored-dir/',
    '!ignored-dir/unignored.txt',
    '**/gen/*.txt',
    '\\#hash.txt',
    'trail.txt   ',
    '',
  ].join('\n')),
  f(r('repo/.ignore'), 'by-dotignore.txt\n'),
  f(r('repo/.rgignore'), '!rg-whitelisted.log\n'),
  f(r('repo/a.txt'), 'foo a\n'),
  f(r('repo/x.log'), 'foo log\n'),
  f(r('repo/keep.log'), 'foo keep\n'),
  f(r('repo/rg-whitelisted.log'), 'foo whitelisted by rgignore\n'),
  f(r('repo/build/out.txt'), 'foo build\n'),
  f(r('repo/rootonly.txt'), 'foo rootonly\n'),
  f(r('repo/ignored-dir/unignored.txt'), 'foo unignored under ignored dir\n'),
  f(r('repo/excluded-by-info.txt'), 'foo info exclude\n'),
  f(r('repo/by-dotignore.txt'), 'foo dotignore\n'),
  f(r('repo/x.globalignored'), 'foo global\n'),
  f(r('repo/#hash.txt'), 'foo hash\n'),
  f(r('repo/trail.txt'), 'foo trail\n'),
  f(r('repo/gen/g.txt'), 'foo gen\n'),
  f(r('repo/a/gen/g.txt'), 'foo nested gen\n'),
  f(r('repo/sub/.gitignore'), '!*.log\nlocal.txt\n'),
  f(r('repo/sub/y.log'), 'foo reincluded log\n'),
  f(r('repo/sub/local.txt'), 'foo local\n'),
  f(r('repo/sub/rootonly.txt'), 'foo not root\n'),
  f(r('repo/sub/build'), 'foo file named build\n'),
  f(r('repo/sub/deeper/local.txt'), 'foo deeper local\n'),
  f(r('repo/sub/deeper/z.log'), 'foo deeper log\n'),

  // a repository nested in repo/: repo/.gitignore's *.log stops at its root.
  dir(r('repo/nested/.git')),
  f(r('repo/nested/n.log'), 'foo nested repo log\n'),
  f(r('repo/nested/n.txt'), 'foo nested repo txt\n'),
  f(r('repo/x.rootgitignored'), 'foo\n'),

  // nogit: ignore files outside any repository.
  f(r('nogit/.gitignore'), '*.log\n'),
  f(r('nogit/.ignore'), 'ign.txt\nrgign.txt\n'),
  f(r('nogit/.rgignore'), '!ign.txt\n'),
  f(r('nogit/a.log'), 'foo log not ignored\n'),
  f(r('nogit/ign.txt'), 'foo ign\n'),
  f(r('nogit/rgign.txt'), 'foo rgign\n'),
  f(r('nogit/plain.txt'), 'foo plain\n'),
  f(r('nogit/x.globalignored'), 'foo global outside repo\n'),
  f(r('nogit/x.rootgitignored'), 'foo\n'),

  // gitfile: a .git *file* (worktree/submodule style) also makes a repository.
  f(r('gitfile/.git'), 'gitdir: ../nowhere\n'),
  f(r('gitfile/.gitignore'), '*.log\n'),
  f(r('gitfile/a.log'), 'foo\n'),
  f(r('gitfile/b.txt'), 'foo\n'),

  // hidden files and directories.
  f(r('hidden/visible.txt'), 'foo visible\n'),
  f(r('hidden/.hidden.txt'), 'foo hidden\n'),
  f(r('hidden/.hdir/inner.txt'), 'foo inner\n'),
  f(r('hidden/.hdir/.inner-hidden.txt'), 'foo inner hidden\n'),
  f(r('hidden/.whitelisted.txt'), 'foo whitelisted\n'),
  f(r('hidden/.ignore'), '!.whitelisted.txt\n'),
  f(r('hidden/.bashrc'), 'foo bashrc\n'),

  // globs.
  f(r('globs/src/a.ts'), 'foo a.ts\n'),
  f(r('globs/src/b.js'), 'foo b.js\n'),
  f(r('globs/src/deep/c.ts'), 'foo c.ts\n'),
  f(r('globs/test/a_test.ts'), 'foo test\n'),
  f(r('globs/README.md'), 'foo readme\n'),
  f(r('globs/docs/x.md'), 'foo docs\n'),
  f(r('globs/Makefile'), 'foo make\n'),

  // types.
  ...[
    'a.js', 'b.ts', 'c.py', 'd.rs', 'e.go', 'f.md', 'g.c', 'h.h', 'i.cpp', 'j.json', 'k.yaml', 'l.sh',
    'm.tsx', 'n.jsx', 'o.markdown', 'Makefile', 'Dockerfile', 'CMakeLists.txt', 'noext', '.bashrc', 'p.H',
  ].map((n) => f(r('types/' + n), `foo ${n}\n`)),

  // binary and encodings.
  parts(r('bin/early.dat'), { text: 'foo before\n' }, { b64: 'AA==' }, { text: 'foo after\n' }),
  parts(r('bin/late.dat'), { text: 'foo early\n' }, { text: 'padding line\n', repeat: 16000 }, { b64: 'AA==' },
    { text: '\nfoo after nul\n' }),
  parts(r('bin/utf16le.txt'), { b64: '//4=' }, { b64: Buffer.from('héllo foo\nbar\n', 'utf16le').toString('base64') }),
  parts(r('bin/utf16be.txt'), { b64: '/v8=' }, { b64: Buffer.from('héllo foo\n', 'utf16le').swap16().toString('base64') }),
  parts(r('bin/utf8bom.txt'), { b64: '77u/' }, { text: 'foo first\nfoo second\n' }),
  parts(r('bin/latin1.txt'), { text: 'foo ' }, { b64: '6Q==' }, { text: '\nplain foo\n' }),
  parts(r('bin/truncated.txt'), { text: 'foo ' }, { b64: '4oI=' }, { text: ' x ' }, { b64: '6ek=' }, { text: ' y\n' }),
  parts(r('bin/utf16nobom.txt'), { b64: Buffer.from('foo\n', 'utf16le').toString('base64') }),

  // binary detection at the 64 KiB read boundary: the NUL is the first byte
  // of the second read (foo B, the last whole line before it, is searched),
  // then one byte later (foo B straddles the boundary and is not).
  parts(r('binedge/at65536.dat'), { text: 'foo A\n' }, { text: 'padding\n', repeat: 8190 }, { text: 'ppp\n' },
    { text: 'foo B\n' }, { b64: 'AA==' }, { text: '\nfoo C\n' }),
  parts(r('binedge/at65537.dat'), { text: 'foo A\n' }, { text: 'padding\n', repeat: 8190 }, { text: 'pppp\n' },
    { text: 'foo B\n' }, { b64: 'AA==' }, { text: '\nfoo C\n' }),
  parts(r('binedge/at65535.dat'), { text: 'foo A\n' }, { text: 'padding\n', repeat: 8190 }, { text: 'pp\n' },
    { text: 'foo B\n' }, { b64: 'AA==' }, { text: '\nfoo C\n' }),

  // symlinks.
  f(r('links/real.txt'), 'foo real\n'),
  link(r('links/tofile'), 'real.txt'),
  link(r('links/todir'), '../basic'),
  link(r('links/out'), '../../outside'),
  link(r('links/outfile'), '../../outside/secret.txt'),
  link(r('links/dangling'), 'does-not-exist'),

  // headLimit.
  f(r('hl/a.txt'), hlLines.join('\n') + '\n'),

  // path order: what a path-sorted walk does with names sharing prefixes.
  ...['a.txt', 'a/x.txt', 'a-b.txt', 'a0.txt', 'B.txt', '_u.txt', 'é.txt', 'Z/z.txt', 'a b.txt', 'ab/c.txt']
    .map((n) => f(r('order/' + n), 'foo\n')),

  // special characters in the regex.
  f(r('regex/a.txt'), [
    'foo(bar)',
    'a.b',
    'axb',
    'price $5',
    'back\\slash',
    'tab\there',
    'x{2}',
    'aaa',
    'FooBar',
    'foo123',
    'rm -rf /',
    'fork :() bomb',
    'bcd',
  ].join('\n') + '\n'),

  // an ignore file with a broken glob: rg warns on stderr and carries on.
  f(r('badignore/.ignore'), 'a[\n*.skip\n'),
  f(r('badignore/a.txt'), 'foo\n'),
  f(r('badignore/b.skip'), 'foo\n'),
];

// Every case: {name, args, note?}. `note` explains what the case pins down.
export const cases = [
  // ── output modes ─────────────────────────────────────────────────────────
  { name: 'files_default_mode', args: { pattern: 'foo', path: 'basic' } },
  { name: 'files_explicit_mode', args: { pattern: 'foo', path: 'basic', outputMode: 'files_with_matches' } },
  { name: 'count_mode', args: { pattern: 'foo', path: 'basic', outputMode: 'count' } },
  { name: 'content_mode', args: { pattern: 'foo', path: 'basic', outputMode: 'content' } },
  { name: 'content_line_numbers', args: { pattern: 'foo', path: 'basic', outputMode: 'content', lineNumbers: true } },
  { name: 'content_line_numbers_false', args: { pattern: 'foo', path: 'basic', outputMode: 'content', lineNumbers: false } },
  { name: 'files_line_numbers_ignored', args: { pattern: 'foo', path: 'basic', lineNumbers: true } },
  { name: 'count_context_ignored', args: { pattern: 'foo', path: 'basic', outputMode: 'count', contextAround: 2, lineNumbers: true } },
  { name: 'files_context_ignored', args: { pattern: 'foo', path: 'basic', outputMode: 'files_with_matches', contextBefore: 1 } },
  { name: 'count_multiple_per_line', args: { pattern: 'foo', path: 'basic/triple.txt', outputMode: 'count' }, note: 'counts lines, not matches' },
  { name: 'no_matches', args: { pattern: 'zzz-not-anywhere', path: 'basic' } },
  { name: 'no_matches_content', args: { pattern: 'zzz-not-anywhere', path: 'basic', outputMode: 'content' } },
  { name: 'no_matches_count', args: { pattern: 'zzz-not-anywhere', path: 'basic', outputMode: 'count' } },
  { name: 'whole_workspace_dot', args: { pattern: 'foo', path: '.' }, note: 'every default rule at once; paths start with ./' },
  { name: 'whole_workspace_count_dot', args: { pattern: 'foo', path: '.', outputMode: 'count' } },

  // ── the path argument ────────────────────────────────────────────────────
  { name: 'path_dot_slash', args: { pattern: 'foo', path: './basic' } },
  { name: 'path_trailing_slash', args: { pattern: 'foo', path: 'basic/' } },
  { name: 'path_double_slash', args: { pattern: 'foo', path: 'basic//sub' } },
  { name: 'path_dotdot_inside', args: { pattern: 'foo', path: 'basic/sub/..' }, note: 'printed as given' },
  { name: 'path_file', args: { pattern: 'foo', path: 'basic/a.txt', outputMode: 'content' } },
  { name: 'path_file_count', args: { pattern: 'foo', path: 'basic/a.txt', outputMode: 'count' } },
  { name: 'path_file_files', args: { pattern: 'foo', path: 'basic/a.txt' } },
  { name: 'path_file_space_unicode', args: { pattern: 'foo', path: 'basic/ünï.txt', outputMode: 'content', lineNumbers: true } },
  { name: 'path_absolute_in_root', args: { pattern: 'foo', path: '<ROOT>/basic', outputMode: 'content' }, note: 'rg prints the absolute host path (normalised to <ROOT>)' },
  { name: 'path_absolute_workspace_style', args: { pattern: 'foo', path: '/basic' }, note: 'rg looks at the host /basic, not the workspace' },
  { name: 'path_missing', args: { pattern: 'foo', path: 'nope' } },
  { name: 'path_missing_file', args: { pattern: 'foo', path: 'basic/nope.txt', outputMode: 'content' } },
  { name: 'path_ignored_file_explicit', args: { pattern: 'foo', path: 'repo/x.log', outputMode: 'content' }, note: 'explicit paths bypass ignore rules' },
  { name: 'path_tilde', args: { pattern: 'foo', path: '~' }, note: 'no shell expansion' },
  { name: 'path_omitted', args: { pattern: 'foo' }, note: 'reference hangs: rg reads its stdin (an open socket) when no path is given' },
  { name: 'path_omitted_content', args: { pattern: 'foo bar', outputMode: 'content' }, note: 'reference hangs' },
  { name: 'path_empty_string', args: { pattern: 'foo', path: '' }, note: 'empty path is falsy: same as omitted (hangs)' },
  { name: 'path_dash', args: { pattern: 'foo', path: '-' }, note: 'rg treats - as stdin (hangs)' },

  // ── outside the workspace (security) ─────────────────────────────────────
  { name: 'escape_dotdot', args: { pattern: 'foo', path: '../outside' }, security: true },
  { name: 'escape_dotdot_content', args: { pattern: 'foo', path: 'basic/../../outside', outputMode: 'content' }, security: true },
  { name: 'escape_parent', args: { pattern: 'foo', path: '..' }, security: true },
  { name: 'escape_absolute', args: { pattern: 'foo', path: '<OUTSIDE>' }, security: true },
  { name: 'escape_symlink_dir', args: { pattern: 'foo', path: 'links/out' }, security: true },
  { name: 'escape_symlink_dir_slash', args: { pattern: 'foo', path: 'links/out/', outputMode: 'content' }, security: true },
  { name: 'escape_symlink_file', args: { pattern: 'foo', path: 'links/outfile', outputMode: 'content' }, security: true },

  // ── symlinks ─────────────────────────────────────────────────────────────
  { name: 'links_walk_skips_symlinks', args: { pattern: 'foo', path: 'links' } },
  { name: 'links_explicit_file', args: { pattern: 'foo', path: 'links/tofile', outputMode: 'content' } },
  { name: 'links_explicit_dir_inside', args: { pattern: 'foo', path: 'links/todir' } },
  { name: 'links_dangling_explicit', args: { pattern: 'foo', path: 'links/dangling' } },

  // ── ignore rules ─────────────────────────────────────────────────────────
  { name: 'ignore_repo', args: { pattern: 'foo', path: 'repo' }, note: '.gitignore (nested, negation, anchored, dir-only, **), info/exclude, global, .ignore, .rgignore' },
  { name: 'ignore_nested_repo', args: { pattern: 'foo', path: 'repo/nested' }, note: "the outer repo's .gitignore does not reach into a nested repo" },
  { name: 'ignore_repo_sub_parent_rules', args: { pattern: 'foo', path: 'repo/sub' }, note: 'the parent .gitignore still applies' },
  { name: 'ignore_repo_deeper', args: { pattern: 'foo', path: 'repo/sub/deeper' } },
  { name: 'ignore_nogit', args: { pattern: 'foo', path: 'nogit' }, note: '.gitignore without a repository is not honoured; .ignore and .rgignore are' },
  { name: 'ignore_gitfile', args: { pattern: 'foo', path: 'gitfile' }, note: 'a .git file makes a repository too' },
  { name: 'ignore_git_dir_explicit', args: { pattern: 'foo', path: 'repo/.git', outputMode: 'content' }, note: 'an explicit .git path is searched' },
  { name: 'ignore_glob_overrides_gitignore', args: { pattern: 'foo', path: 'repo', glob: '*.log' } },
  { name: 'ignore_glob_star_enters_git', args: { pattern: 'foo', path: 'repo', glob: '*' }, note: 'a whitelist glob matching .git makes rg search it' },

  // ── hidden files ─────────────────────────────────────────────────────────
  { name: 'hidden_walk', args: { pattern: 'foo', path: 'hidden' }, note: '.ignore whitelist re-includes a hidden file' },
  { name: 'hidden_explicit_file', args: { pattern: 'foo', path: 'hidden/.hidden.txt', outputMode: 'content' } },
  { name: 'hidden_explicit_dir', args: { pattern: 'foo', path: 'hidden/.hdir' } },
  { name: 'hidden_glob_txt', args: { pattern: 'foo', path: 'hidden', glob: '*.txt' }, note: 'a whitelist glob matching a hidden file includes it' },
  { name: 'hidden_glob_star', args: { pattern: 'foo', path: 'hidden', glob: '*' } },
  { name: 'hidden_type_sh', args: { pattern: 'foo', path: 'hidden', type: 'sh' }, note: '.bashrc is in the sh type, so the type whitelists it' },

  // ── globs ────────────────────────────────────────────────────────────────
  { name: 'glob_ext', args: { pattern: 'foo', path: 'globs', glob: '*.ts' } },
  { name: 'glob_negated', args: { pattern: 'foo', path: 'globs', glob: '!*.ts' } },
  { name: 'glob_brace', args: { pattern: 'foo', path: 'globs', glob: '*.{ts,js}' } },
  { name: 'glob_charclass', args: { pattern: 'foo', path: 'globs', glob: '[ab].ts' } },
  { name: 'glob_anchored_to_root', args: { pattern: 'foo', path: 'globs', glob: 'globs/src/**/*.ts' }, note: 'a glob with a slash is relative to the workspace root' },
  { name: 'glob_relative_to_search_path', args: { pattern: 'foo', path: 'globs', glob: 'src/**/*.ts' }, note: 'not relative to path: no match' },
  { name: 'glob_leading_slash', args: { pattern: 'foo', path: 'globs', glob: '/globs/src/*' } },
  { name: 'glob_doublestar_prefix', args: { pattern: 'foo', path: 'globs', glob: '**/deep/*.ts' } },
  { name: 'glob_negated_dir', args: { pattern: 'foo', path: 'globs', glob: '!src' } },
  { name: 'glob_case_sensitive', args: { pattern: 'foo', path: 'globs', glob: '*.TS' } },
  { name: 'glob_case_with_i', args: { pattern: 'foo', path: 'globs', glob: '*.TS', caseInsensitive: true }, note: '-i does not make globs case-insensitive' },
  { name: 'glob_basename_exact', args: { pattern: 'foo', path: 'globs', glob: 'Makefile' } },
  { name: 'glob_absolute_search_path', args: { pattern: 'foo', path: '<ROOT>/globs', glob: 'globs/src/*.ts' } },
  { name: 'glob_invalid', args: { pattern: 'foo', path: 'globs', glob: '[' } },
  { name: 'glob_with_type', args: { pattern: 'foo', path: 'types', glob: '!b.ts', type: 'ts' } },
  { name: 'ignore_broken_glob_line', args: { pattern: 'foo', path: 'badignore' }, note: 'the bad line is reported on stderr (dropped) and the rest of the file applies' },
  { name: 'glob_on_explicit_file', args: { pattern: 'foo', path: 'globs/src/a.ts', glob: '*.md' } },

  // ── types ────────────────────────────────────────────────────────────────
  { name: 'type_js', args: { pattern: 'foo', path: 'types', type: 'js' } },
  { name: 'type_ts', args: { pattern: 'foo', path: 'types', type: 'ts' } },
  { name: 'type_py', args: { pattern: 'foo', path: 'types', type: 'py' } },
  { name: 'type_rust', args: { pattern: 'foo', path: 'types', type: 'rust' } },
  { name: 'type_go', args: { pattern: 'foo', path: 'types', type: 'go' } },
  { name: 'type_c', args: { pattern: 'foo', path: 'types', type: 'c' } },
  { name: 'type_cpp', args: { pattern: 'foo', path: 'types', type: 'cpp' } },
  { name: 'type_md', args: { pattern: 'foo', path: 'types', type: 'md' } },
  { name: 'type_markdown', args: { pattern: 'foo', path: 'types', type: 'markdown' } },
  { name: 'type_make', args: { pattern: 'foo', path: 'types', type: 'make' } },
  { name: 'type_docker', args: { pattern: 'foo', path: 'types', type: 'docker' } },
  { name: 'type_cmake', args: { pattern: 'foo', path: 'types', type: 'cmake' } },
  { name: 'type_sh_hidden', args: { pattern: 'foo', path: 'types', type: 'sh' } },
  { name: 'type_all', args: { pattern: 'foo', path: 'types', type: 'all' } },
  { name: 'type_unknown', args: { pattern: 'foo', path: 'types', type: 'nosuchtype' } },
  { name: 'type_on_explicit_file', args: { pattern: 'foo', path: 'types/c.py', type: 'js' } },

  // ── case, regex flavour ──────────────────────────────────────────────────
  { name: 'case_sensitive_default', args: { pattern: 'FOO', path: 'basic' } },
  { name: 'case_insensitive', args: { pattern: 'FOO', path: 'basic', outputMode: 'content', caseInsensitive: true } },
  { name: 'case_insensitive_false', args: { pattern: 'Foo', path: 'basic', outputMode: 'content', caseInsensitive: false } },
  { name: 'case_inline_flag', args: { pattern: '(?i)FOO BAR', path: 'basic', outputMode: 'content' } },
  { name: 'empty_pattern_count', args: { pattern: '', path: 'basic', outputMode: 'count' } },
  { name: 'empty_pattern_content', args: { pattern: '', path: 'basic/a.txt', outputMode: 'content', lineNumbers: true } },
  { name: 'pattern_leading_dash', args: { pattern: '-foo', path: 'basic', outputMode: 'content' } },
  { name: 'pattern_single_quote', args: { pattern: "it's", path: 'basic', outputMode: 'content' } },
  { name: 'pattern_shell_chars', args: { pattern: '\\$HOME and `cmd`', path: 'basic', outputMode: 'content' } },
  { name: 'regex_alternation', args: { pattern: 'foo|bar', path: 'basic', outputMode: 'count' } },
  { name: 'regex_anchors', args: { pattern: '^foo$', path: 'basic', outputMode: 'content', lineNumbers: true } },
  { name: 'regex_word_boundary', args: { pattern: '\\bfoo\\b', path: 'basic', outputMode: 'content' } },
  { name: 'regex_escaped_parens', args: { pattern: 'foo\\(bar\\)', path: 'regex', outputMode: 'content' } },
  { name: 'regex_dot', args: { pattern: '^a.b$', path: 'regex', outputMode: 'content' } },
  { name: 'regex_repetition', args: { pattern: 'a{3}', path: 'regex', outputMode: 'content' } },
  { name: 'regex_tab_escape', args: { pattern: 'tab\\there', path: 'regex', outputMode: 'content' } },
  { name: 'regex_literal_backslash', args: { pattern: 'back\\\\slash', path: 'regex', outputMode: 'content' } },
  { name: 'regex_posix_class', args: { pattern: '[[:digit:]]+', path: 'regex', outputMode: 'content' } },
  { name: 'regex_class_intersection', args: { pattern: '^[a-z&&[^aeiou]]+$', path: 'regex', outputMode: 'content' }, note: 'Rust class set operation; RE2 has none' },
  { name: 'regex_nested_class', args: { pattern: '^a[.[x]]b$', path: 'regex', outputMode: 'content' } },
  { name: 'regex_named_group_p', args: { pattern: '(?P<n>foo)123', path: 'regex', outputMode: 'content' } },
  { name: 'regex_named_group_angle', args: { pattern: '(?<n>foo)', path: 'regex' }, note: 'rg 13 (regex 1.5) rejects (?<name>)' },
  { name: 'regex_invalid_unclosed_group', args: { pattern: '(', path: 'regex' } },
  { name: 'regex_invalid_unclosed_class', args: { pattern: '[a', path: 'regex' } },
  { name: 'regex_invalid_repetition', args: { pattern: 'x{2,1}', path: 'regex' } },
  { name: 'regex_invalid_escape', args: { pattern: '\\<foo', path: 'regex' } },
  { name: 'regex_repeat_over_1000', args: { pattern: 'a{1001}', path: 'regex' }, note: 'fine in rg; RE2 caps counted repetition at 1000' },
  { name: 'regex_size_limit', args: { pattern: '\\w{5000}', path: 'regex' }, note: 'rg refuses a compiled program over its size limit' },
  { name: 'regex_escape_slash', args: { pattern: 'a\\/b', path: 'regex' }, note: 'rg 13 escapes only meta characters; RE2 escapes any punctuation' },
  { name: 'regex_escape_quote', args: { pattern: '\\"', path: 'regex' } },
  { name: 'regex_escape_dash', args: { pattern: 'rm \\-rf', path: 'regex', outputMode: 'count' } },
  { name: 'regex_quote_meta', args: { pattern: '\\Qa.b\\E', path: 'regex' }, note: 'RE2 has \\Q...\\E, rg does not' },
  { name: 'regex_octal_zero', args: { pattern: '\\0', path: 'regex' } },
  { name: 'regex_brace_unclosed', args: { pattern: 'x{', path: 'regex' }, note: 'RE2 reads a lone { as a literal' },
  { name: 'regex_brace_empty', args: { pattern: '{}', path: 'regex' } },
  { name: 'regex_brace_escaped', args: { pattern: 'x\\{2\\}', path: 'regex', outputMode: 'content' } },
  { name: 'regex_verbose_flag', args: { pattern: '(?x) foo \\( bar \\)  # comment', path: 'regex', outputMode: 'content' }, note: 'RE2 has no x flag' },
  { name: 'regex_text_anchors', args: { pattern: '\\Afoo\\d+\\z', path: 'regex', outputMode: 'content' }, note: '\\A and \\z bound each line outside multiline mode' },
  { name: 'regex_possessive', args: { pattern: 'a++', path: 'regex' } },
  { name: 'regex_backreference', args: { pattern: '(a)\\1', path: 'regex' } },
  { name: 'regex_lookahead', args: { pattern: 'foo(?=bar)', path: 'regex' } },
  { name: 'regex_lookbehind', args: { pattern: '(?<=a)b', path: 'regex' } },
  { name: 'regex_newline_escape_no_multiline', args: { pattern: 'start\\nmiddle', path: 'ml' } },
  { name: 'regex_literal_newline_no_multiline', args: { pattern: 'start\nmiddle', path: 'ml' } },
  { name: 'pattern_nul', args: { pattern: 'a\u0000b', path: 'regex' }, note: 'Node refuses to spawn an argument with a NUL' },
  { name: 'regex_dangerous_forkbomb', args: { pattern: ':()', path: 'regex', outputMode: 'content' }, note: "the reference's footgun filter runs on the rg command line" },
  { name: 'regex_dangerous_rm', args: { pattern: 'rm -rf /', path: 'regex', outputMode: 'content' } },
  { name: 'regex_dangerous_rm_via_path', args: { pattern: 'rm -r', path: './regex', outputMode: 'content' }, note: 'the filter sees -r ... / across pattern and path' },

  // ── Unicode ──────────────────────────────────────────────────────────────
  { name: 'unicode_digit', args: { pattern: '^arabic \\d$', path: 'unicode', outputMode: 'content' }, note: '\\d is Unicode-aware in rg' },
  { name: 'unicode_word', args: { pattern: '^\\w+$', path: 'unicode', outputMode: 'content', lineNumbers: true } },
  { name: 'unicode_word_boundary', args: { pattern: 'caf\\b', path: 'unicode', outputMode: 'content' }, note: 'é is a word character, so no boundary inside café' },
  { name: 'unicode_space', args: { pattern: '^\\s', path: 'unicode', outputMode: 'content' }, note: '\\s includes U+00A0 and \\t' },
  { name: 'unicode_dot', args: { pattern: '^caf.$', path: 'unicode', outputMode: 'content' } },
  { name: 'unicode_ci_greek', args: { pattern: 'ΣΊΣΥΦΟΣ', path: 'unicode', outputMode: 'content', caseInsensitive: true } },
  { name: 'unicode_ci_kelvin', args: { pattern: 'kelvin k', path: 'unicode', outputMode: 'content', caseInsensitive: true } },
  { name: 'unicode_ci_sharp_s', args: { pattern: 'STRASSE', path: 'unicode', outputMode: 'content', caseInsensitive: true }, note: 'simple case folding only: ß is not SS' },
  { name: 'unicode_ci_capital_sharp_s', args: { pattern: 'stra\u1E9Ee', path: 'unicode', outputMode: 'content', caseInsensitive: true } },
  { name: 'unicode_property', args: { pattern: '\\p{Greek}+', path: 'unicode', outputMode: 'content' } },
  { name: 'unicode_escape_u', args: { pattern: 'caf\\u{e9}', path: 'unicode', outputMode: 'content' }, note: 'rg accepts \\u{..} and \\uXXXX; RE2 does not' },
  { name: 'unicode_escape_x', args: { pattern: 'caf\\x{e9}', path: 'unicode', outputMode: 'content' } },
  { name: 'unicode_property_loose', args: { pattern: '\\p{greek}{3}', path: 'unicode', outputMode: 'content' }, note: 'loose property names' },
  { name: 'unicode_property_script_eq', args: { pattern: '\\p{sc=Greek}{3}', path: 'unicode', outputMode: 'content' } },
  { name: 'unicode_property_binary', args: { pattern: '^\\p{Alphabetic}+$', path: 'unicode', outputMode: 'content' } },
  { name: 'unicode_ascii_only_flag', args: { pattern: '(?-u)^\\w+$', path: 'unicode', outputMode: 'content' } },
  { name: 'unicode_emoji', args: { pattern: '🎉', path: 'unicode', outputMode: 'content', lineNumbers: true } },
  { name: 'unicode_ci_accent', args: { pattern: 'CAFé', path: 'unicode', outputMode: 'count', caseInsensitive: true } },

  // ── line shapes ──────────────────────────────────────────────────────────
  { name: 'crlf_content', args: { pattern: 'foo', path: 'crlf', outputMode: 'content', lineNumbers: true }, note: '\\r kept except the very last one, which the reference trims' },
  { name: 'crlf_dollar', args: { pattern: 'end$', path: 'crlf', outputMode: 'content' } },
  { name: 'crlf_count', args: { pattern: 'foo', path: 'crlf', outputMode: 'count' } },
  { name: 'long_line', args: { pattern: 'foo', path: 'long', outputMode: 'content' }, note: 'no max-columns' },
  { name: 'no_trailing_newline', args: { pattern: 'foo', path: 'nonl', outputMode: 'content', lineNumbers: true } },
  { name: 'whitespace_trim', args: { pattern: 'foo', path: 'ws/a.txt', outputMode: 'content' }, note: 'only the end of the whole output is trimmed' },

  // ── context ──────────────────────────────────────────────────────────────
  { name: 'context_after', args: { pattern: 'match', path: 'ctx/a.txt', outputMode: 'content', contextAfter: 2, lineNumbers: true } },
  { name: 'context_before', args: { pattern: 'match', path: 'ctx/a.txt', outputMode: 'content', contextBefore: 2, lineNumbers: true } },
  { name: 'context_around_merge', args: { pattern: 'match', path: 'ctx/a.txt', outputMode: 'content', contextAround: 2, lineNumbers: true } },
  { name: 'context_around_no_numbers', args: { pattern: 'match', path: 'ctx/a.txt', outputMode: 'content', contextAround: 1 } },
  { name: 'context_before_overrides_around', args: { pattern: 'match', path: 'ctx/a.txt', outputMode: 'content', contextAround: 3, contextBefore: 0, lineNumbers: true } },
  { name: 'context_after_overrides_around', args: { pattern: 'match', path: 'ctx/a.txt', outputMode: 'content', contextAround: 1, contextAfter: 4, lineNumbers: true } },
  { name: 'context_zero', args: { pattern: 'match', path: 'ctx/a.txt', outputMode: 'content', contextAround: 0 } },
  { name: 'context_two_files', args: { pattern: 'match', path: 'ctx', outputMode: 'content', contextAround: 1, lineNumbers: true }, note: '-- also separates files' },
  { name: 'context_large', args: { pattern: 'match 12', path: 'ctx/a.txt', outputMode: 'content', contextAround: 100 } },

  // ── multiline ────────────────────────────────────────────────────────────
  { name: 'multiline_off', args: { pattern: 'start.*end', path: 'ml', outputMode: 'content' } },
  { name: 'multiline_dotall', args: { pattern: 'start.*end', path: 'ml', outputMode: 'content', multiline: true, lineNumbers: true } },
  { name: 'multiline_newline', args: { pattern: 'start\\nmiddle', path: 'ml', outputMode: 'content', multiline: true, lineNumbers: true } },
  { name: 'multiline_literal_newline', args: { pattern: 'alpha\nbeta', path: 'ml', outputMode: 'content', multiline: true } },
  { name: 'multiline_count', args: { pattern: 'alpha\\n\\w+', path: 'ml', outputMode: 'count', multiline: true } },
  { name: 'multiline_count_line_mode', args: { pattern: 'alpha|beta', path: 'ml/b.txt', outputMode: 'count', multiline: true }, note: 'a regex that cannot match a newline is searched line by line: lines are counted' },
  { name: 'multiline_count_matches', args: { pattern: 'x1\\nx|2\\nx3', path: 'ml/c.txt', outputMode: 'count', multiline: true }, note: 'a regex that can match a newline: matches are counted' },
  { name: 'multiline_content_shared_line', args: { pattern: 'x1\\nx|2\\nx3', path: 'ml/c.txt', outputMode: 'content', multiline: true, lineNumbers: true }, note: 'a line shared by two matches is printed once' },
  { name: 'multiline_count_same_line', args: { pattern: 'foo\\s?', path: 'basic/triple.txt', outputMode: 'count', multiline: true } },
  { name: 'multiline_files', args: { pattern: 'middle\\nend', path: 'ml', multiline: true } },
  { name: 'multiline_caret', args: { pattern: '^end', path: 'ml', outputMode: 'content', multiline: true, lineNumbers: true } },
  { name: 'multiline_lazy', args: { pattern: 'alpha.*?gamma', path: 'ml/b.txt', outputMode: 'content', multiline: true, lineNumbers: true } },
  { name: 'multiline_context', args: { pattern: 'middle\\nend', path: 'ml/a.txt', outputMode: 'content', multiline: true, contextAround: 1, lineNumbers: true } },
  { name: 'multiline_insensitive', args: { pattern: 'START\\nMIDDLE', path: 'ml', outputMode: 'content', multiline: true, caseInsensitive: true } },

  // ── binary and encodings ─────────────────────────────────────────────────
  { name: 'binary_walk_files', args: { pattern: 'foo', path: 'bin' } },
  { name: 'binary_walk_count', args: { pattern: 'foo', path: 'bin', outputMode: 'count' }, note: 'a file that hit the NUL after matching has its count suppressed' },
  { name: 'binary_walk_content', args: { pattern: 'foo', path: 'bin', outputMode: 'content', lineNumbers: true } },
  { name: 'binary_explicit_content', args: { pattern: 'foo', path: 'bin/early.dat', outputMode: 'content' } },
  { name: 'binary_explicit_count', args: { pattern: 'foo', path: 'bin/early.dat', outputMode: 'count' } },
  { name: 'binary_explicit_files', args: { pattern: 'foo', path: 'bin/early.dat' } },
  { name: 'binary_explicit_late_content', args: { pattern: 'foo', path: 'bin/late.dat', outputMode: 'content' } },
  { name: 'binary_read_boundary', args: { pattern: 'foo', path: 'binedge', outputMode: 'content', lineNumbers: true }, note: 'NUL at offsets 65535/65536/65537: rg reads 64 KiB blocks' },
  { name: 'binary_read_boundary_files', args: { pattern: 'foo', path: 'binedge' } },
  { name: 'encoding_utf16', args: { pattern: 'héllo', path: 'bin', outputMode: 'content', lineNumbers: true } },
  { name: 'encoding_utf8_bom', args: { pattern: '^foo', path: 'bin/utf8bom.txt', outputMode: 'content', lineNumbers: true } },
  { name: 'encoding_invalid_utf8_dot', args: { pattern: 'foo .$', path: 'bin/latin1.txt', outputMode: 'content' }, note: '. does not match an invalid byte' },
  { name: 'encoding_invalid_utf8_print', args: { pattern: 'foo', path: 'bin/latin1.txt', outputMode: 'content' }, note: 'the raw byte reaches the reference, which decodes it as U+FFFD' },
  { name: 'encoding_invalid_utf8_replacement', args: { pattern: 'foo', path: 'bin/truncated.txt', outputMode: 'content' }, note: 'E2 82 (a cut sequence) becomes one U+FFFD, E9 E9 two: WHATWG decoding of the output' },
  { name: 'encoding_raw_byte_class', args: { pattern: '(?-u)foo \\xE9', path: 'bin/latin1.txt', outputMode: 'count' } },

  // ── headLimit ────────────────────────────────────────────────────────────
  { name: 'head_limit_content', args: { pattern: 'foo', path: 'hl/a.txt', outputMode: 'content', headLimit: 3 } },
  { name: 'head_limit_exact', args: { pattern: 'foo', path: 'hl/a.txt', outputMode: 'content', headLimit: 10 } },
  { name: 'head_limit_one_less', args: { pattern: 'foo', path: 'hl/a.txt', outputMode: 'content', headLimit: 9, lineNumbers: true } },
  { name: 'head_limit_large', args: { pattern: 'foo', path: 'hl/a.txt', outputMode: 'content', headLimit: 1000 } },
  { name: 'head_limit_files', args: { pattern: 'foo', path: 'order', headLimit: 4 }, note: 'which files are kept depends on rg order in the reference' },
  { name: 'head_limit_count', args: { pattern: 'foo', path: 'basic', outputMode: 'count', headLimit: 2 } },
  { name: 'head_limit_context_separators', args: { pattern: 'match', path: 'ctx/a.txt', outputMode: 'content', contextAround: 1, headLimit: 5 }, note: '-- lines count toward the limit' },
  { name: 'head_limit_no_matches', args: { pattern: 'zzz', path: 'hl', headLimit: 1 } },

  // ── ordering ─────────────────────────────────────────────────────────────
  { name: 'order_files', args: { pattern: 'foo', path: 'order' }, note: 'rg prints in walk order; see sortedText' },
  { name: 'order_content', args: { pattern: 'foo', path: 'order', outputMode: 'content' } },

  // ── input validation (zod, before the handler) ───────────────────────────
  { name: 'invalid_missing_pattern', args: { path: 'basic' } },
  { name: 'invalid_pattern_type', args: { pattern: 5, path: 'basic' } },
  { name: 'invalid_output_mode', args: { pattern: 'foo', path: 'basic', outputMode: 'lines' } },
  { name: 'invalid_head_limit_zero', args: { pattern: 'foo', path: 'basic', headLimit: 0 } },
  { name: 'invalid_head_limit_fraction', args: { pattern: 'foo', path: 'basic', headLimit: 1.5 } },
  { name: 'invalid_context_negative', args: { pattern: 'foo', path: 'basic', outputMode: 'content', contextAfter: -1 } },
  { name: 'invalid_case_string', args: { pattern: 'foo', path: 'basic', caseInsensitive: 'yes' } },
  { name: 'unknown_field_ignored', args: { pattern: 'foo', path: 'basic', bogus: 1 } },

  // ── environment ──────────────────────────────────────────────────────────
  { name: 'rg_missing', args: { pattern: 'foo', path: 'basic' }, env: 'no-rg', note: 'PATH without rg' },
];
