package agentbe

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// MemoryConfig configures a Memory backend. The zero value is a valid,
// empty store rooted at "/".
type MemoryConfig struct {
	// RootDir is the root prefix keys are presented under; "" means "/".
	// It must be absolute.
	RootDir string
	// Initial pre-populates the store; keys are paths resolved like any
	// other path (a key escaping the root is a configuration error). As in
	// any key/value store, a key may coexist with keys below it ("a" and
	// "a/b"): it then reads as a file and lists as a directory. Writes made
	// later refuse to create such pairs (EISDIR, ENOTDIR).
	Initial map[string][]byte
	// MaxReadBytes bounds Read and the MCP tools that read a whole value,
	// as LocalConfig.MaxReadBytes does (an error wrapping ErrTooLarge);
	// zero means DefaultMaxReadBytes. Open streams any size.
	MaxReadBytes int64
	// Logger receives operations; nil logs nothing.
	Logger OpLogger
	// LogMode selects the operations Logger receives.
	LogMode LogMode
}

// Memory is an in-memory key/value backend whose keys act as file paths:
// normalised relative paths (no "..", no empty elements). Directories are
// implicit (a key "a/b" makes "a" a directory), Mkdir is a no-op, Stat is
// synthetic and Exec is not implemented. Safe for concurrent use.
type Memory struct {
	store   *memStore
	prefix  string // key prefix of this view ("" at the root)
	rootDir string
	life    *lifecycle
	log     opLog
	scopes  *scopeSet
	view    bool
	maxRead int64 // effective MaxReadBytes
}

var _ Backend = (*Memory)(nil)

type memStore struct {
	mu    sync.RWMutex
	files map[string]memFile
	// dirs counts, for every proper prefix of a key, the keys below it, so
	// directory questions cost O(depth), not O(keys).
	dirs map[string]int
	// kids maps a directory ("" for the root) to the names of its immediate
	// children, each with the count of keys at or below it, so listing a
	// directory costs O(children), not O(keys): a directory_tree over many
	// directories stays linear.
	kids map[string]map[string]int
}

func newMemStore(n int) *memStore {
	return &memStore{files: make(map[string]memFile, n), dirs: map[string]int{}, kids: map[string]map[string]int{}}
}

// set stores f at k, keeping dirs and kids up to date. Callers hold the
// lock.
func (s *memStore) set(k string, f memFile) {
	if _, ok := s.files[k]; !ok {
		forAncestors(k, func(a string) { s.dirs[a]++ })
		forChildren(k, func(parent, name string) {
			m := s.kids[parent]
			if m == nil {
				m = map[string]int{}
				s.kids[parent] = m
			}
			m[name]++
		})
	}
	s.files[k] = f
}

// forChildren calls fn with every (directory, child name) pair on the way
// to k: ("", "a"), ("a", "b"), ("a/b", "c") for "a/b/c".
func forChildren(k string, fn func(parent, name string)) {
	start := 0
	for i := 0; i <= len(k); i++ {
		if i == len(k) || k[i] == '/' {
			parent := ""
			if start > 0 {
				parent = k[:start-1]
			}
			fn(parent, k[start:i])
			start = i + 1
		}
	}
}

// del removes k, keeping dirs up to date. Callers hold the lock.
func (s *memStore) del(k string) {
	if _, ok := s.files[k]; !ok {
		return
	}
	delete(s.files, k)
	forAncestors(k, func(a string) {
		if s.dirs[a]--; s.dirs[a] <= 0 {
			delete(s.dirs, a)
		}
	})
	forChildren(k, func(parent, name string) {
		m := s.kids[parent]
		if m[name]--; m[name] <= 0 {
			delete(m, name)
			if len(m) == 0 {
				delete(s.kids, parent)
			}
		}
	})
}

// fileAncestor returns a proper prefix of k that is itself a key (a file
// cannot be a directory), or "".
func (s *memStore) fileAncestor(k string) string {
	found := ""
	forAncestors(k, func(a string) {
		if _, ok := s.files[a]; ok && found == "" {
			found = a
		}
	})
	return found
}

// forAncestors calls fn for every proper prefix of k ("a", "a/b" for
// "a/b/c").
func forAncestors(k string, fn func(string)) {
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			fn(k[:i])
		}
	}
}

type memFile struct {
	data []byte // never mutated once stored
	mod  time.Time
}

// NewMemory returns a Memory backend.
func NewMemory(cfg MemoryConfig) (*Memory, error) {
	root := cfg.RootDir
	if root == "" {
		root = "/"
	}
	if !path.IsAbs(root) {
		return nil, configErr("Memory RootDir must be absolute", nil)
	}
	root = path.Clean(root)
	if cfg.MaxReadBytes < 0 {
		return nil, configErr("Memory MaxReadBytes must not be negative", nil)
	}
	m := &Memory{maxRead: effectiveReadLimit(cfg.MaxReadBytes),
		store:   newMemStore(len(cfg.Initial)),
		rootDir: root, life: newLifecycle(StatusConnected),
		log: opLog{logger: cfg.Logger, mode: cfg.LogMode}, scopes: newScopeSet(),
	}
	now := time.Now()
	for k, v := range cfg.Initial {
		rel, err := wspath.Resolve(root, k)
		if err != nil || rel == "." {
			return nil, configErr("invalid initial key "+k, err)
		}
		m.store.set(rel, memFile{data: bytes.Clone(v), mod: now})
	}
	return m, nil
}

// Kind reports KindMemory.
func (m *Memory) Kind() Kind { return KindMemory }

// RootDir returns the root prefix.
func (m *Memory) RootDir() string { return m.rootDir }

// Status reports StatusConnected until Destroy, then StatusDestroyed.
func (m *Memory) Status() Status { return m.life.Status() }

// OnStatusChange subscribes fn to status transitions.
func (m *Memory) OnStatusChange(fn func(old, new Status)) func() { return m.life.OnStatusChange(fn) }

// Track registers c to be closed by Destroy and returns the function that
// unregisters it; see Backend.
func (m *Memory) Track(c io.Closer) (untrack func()) { return m.life.track(c) }

// Destroy closes tracked resources, moves to StatusDestroyed and drops the
// data. Idempotent.
func (m *Memory) Destroy(context.Context) error {
	if m.view {
		return nil
	}
	err := m.life.destroy()
	m.store.mu.Lock()
	m.store.files, m.store.dirs, m.store.kids = map[string]memFile{}, map[string]int{}, map[string]map[string]int{}
	m.store.mu.Unlock()
	return err
}

// Scope returns a view restricted to the key prefix p.
func (m *Memory) Scope(p string, opts ScopeOptions) (*Scope, error) {
	if err := m.alive("scope", p); err != nil {
		return nil, err
	}
	return newScope(m, p, opts)
}

func (m *Memory) subtree(rel string) Backend {
	c := *m
	c.prefix = wspath.Within(m.prefix, rel)
	if c.prefix == "." {
		c.prefix = ""
	}
	c.rootDir = wspath.Join(m.rootDir, rel)
	c.log, c.view, c.scopes = opLog{}, true, nil
	return &c
}

func (m *Memory) scopeSet() *scopeSet { return m.scopes }

func (m *Memory) alive(op, p string) error {
	if m.life.dead() {
		return &Error{Code: CodeDestroyed, Op: op, Path: p, Backend: KindMemory, Err: ErrDestroyed}
	}
	return nil
}

// key resolves p to a store key ("" for the root of this view).
func (m *Memory) key(ctx context.Context, op, p string) (string, error) {
	if err := m.alive(op, p); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", &Error{Code: opCode(op), Op: op, Path: p, Backend: KindMemory, Err: err}
	}
	rel, err := wspath.Resolve(m.rootDir, p)
	if err != nil {
		code := opCode(op)
		if errors.Is(err, ErrPathEscape) {
			code = CodePathEscape
		}
		return "", &Error{Code: code, Op: op, Path: p, Backend: KindMemory, Err: err}
	}
	k := wspath.Within(m.prefix, rel)
	if k == "." {
		k = ""
	}
	return k, nil
}

func (m *Memory) notFound(op, p string) error {
	return &Error{Code: CodeKeyNotFound, Op: op, Path: p, Backend: KindMemory,
		Err: &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}}
}

func (m *Memory) failErrno(op, p string, errno syscall.Errno) error {
	return &Error{Code: opCode(op), Op: op, Path: p, Backend: KindMemory,
		Err: &fs.PathError{Op: op, Path: p, Err: errno}}
}

// hasChildren reports whether some key lies below k. Callers hold the lock.
func (s *memStore) hasChildren(k string) bool {
	if k == "" {
		return len(s.files) > 0
	}
	return s.dirs[k] > 0
}

func (m *Memory) get(ctx context.Context, op, p string) (memFile, error) {
	k, err := m.key(ctx, op, p)
	if err != nil {
		return memFile{}, err
	}
	m.store.mu.RLock()
	f, ok := m.store.files[k]
	isDir := !ok && (k == "" || m.store.hasChildren(k))
	m.store.mu.RUnlock()
	if isDir {
		return memFile{}, m.failErrno(op, p, syscall.EISDIR)
	}
	if !ok {
		return memFile{}, m.notFound(op, p)
	}
	return f, nil
}

// Read returns a copy of the value stored at p; a value larger than
// MaxReadBytes fails with an error wrapping ErrTooLarge.
func (m *Memory) Read(ctx context.Context, p string) ([]byte, error) {
	done := m.log.begin(ctx, "read", p)
	f, err := m.get(ctx, "read", p)
	if err == nil && int64(len(f.data)) > m.maxRead {
		err = &Error{Code: CodeReadFailed, Op: "read", Path: p, Backend: KindMemory,
			Err: &tooLargeError{size: int64(len(f.data)), limit: m.maxRead}}
	}
	done(err)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(f.data), nil
}

// MaxReadBytes reports the limit of Read: MemoryConfig.MaxReadBytes, or
// DefaultMaxReadBytes.
func (m *Memory) MaxReadBytes() int64 { return m.maxRead }

// Open streams the value stored at p.
func (m *Memory) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	done := m.log.begin(ctx, "open", p)
	f, err := m.get(ctx, "open", p)
	done(err)
	if err != nil {
		return nil, err
	}
	return memReader{bytes.NewReader(f.data)}, nil
}

// memReader streams a stored value; it also seeks and reads at offsets.
type memReader struct{ *bytes.Reader }

func (memReader) Close() error { return nil }

// Write stores a copy of data at p.
func (m *Memory) Write(ctx context.Context, p string, data []byte) error {
	done := m.log.begin(ctx, "write", p)
	err := m.put(ctx, "write", p, bytes.Clone(data))
	done(err)
	return err
}

func (m *Memory) put(ctx context.Context, op, p string, data []byte) error {
	k, err := m.key(ctx, op, p)
	if err != nil {
		return err
	}
	m.store.mu.Lock()
	defer m.store.mu.Unlock()
	if k == "" || m.store.hasChildren(k) {
		return m.failErrno(op, p, syscall.EISDIR)
	}
	if m.store.fileAncestor(k) != "" {
		return m.failErrno(op, p, syscall.ENOTDIR)
	}
	m.store.set(k, memFile{data: data, mod: time.Now()})
	return nil
}

// Create returns a writer whose content is stored at p on Close (unless ctx
// is done by then).
func (m *Memory) Create(ctx context.Context, p string) (io.WriteCloser, error) {
	if _, err := m.key(ctx, "create", p); err != nil {
		return nil, err
	}
	return &memWriter{m: m, ctx: ctx, p: p, done: m.log.begin(ctx, "create", p)}, nil
}

// memWriter collects a Create's content, up to the backend's
// MaxReadBytes (a value Read could never return is refused as it is
// written, not after it was buffered). It has no ReadFrom, so io.Copy goes
// through Write and the bound.
type memWriter struct {
	buf    bytes.Buffer
	m      *Memory
	ctx    context.Context
	p      string
	done   func(error)
	closed bool
	err    error // the first write error; Close stores nothing then
}

func (w *memWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, fs.ErrClosed
	}
	if limit := w.m.MaxReadBytes(); int64(w.buf.Len())+int64(len(p)) > limit {
		w.err = &Error{Code: CodeWriteFailed, Op: "create", Path: w.p, Backend: KindMemory,
			Err: &tooLargeError{size: -1, limit: limit}}
		return 0, w.err
	}
	return w.buf.Write(p)
}

func (w *memWriter) Close() error {
	if w.closed {
		return fs.ErrClosed
	}
	w.closed = true
	err := w.err
	if err == nil {
		err = w.m.put(w.ctx, "create", w.p, w.buf.Bytes())
	}
	w.done(err)
	return err
}

// ReadDir returns the sorted immediate children of the prefix p; a prefix
// with no keys lists as empty.
func (m *Memory) ReadDir(ctx context.Context, p string) ([]string, error) {
	infos, err := m.children(ctx, p)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(infos))
	for i, info := range infos {
		names[i] = info.name
	}
	return names, nil
}

// children lists the immediate children of p, sorted, with their synthetic
// information, in one pass under one lock (logged as "readdir").
func (m *Memory) children(ctx context.Context, p string) ([]memInfo, error) {
	done := m.log.begin(ctx, "readdir", p)
	k, err := m.key(ctx, "readdir", p)
	if err != nil {
		done(err)
		return nil, err
	}
	pre := ""
	if k != "" {
		pre = k + "/"
	}
	m.store.mu.RLock()
	_, isFile := m.store.files[k]
	kids := m.store.kids[k]
	infos := make([]memInfo, 0, len(kids))
	for name := range kids {
		info := memInfo{name: name, dir: m.store.hasChildren(pre + name)}
		if f, ok := m.store.files[pre+name]; ok && !info.dir {
			info.size, info.mod = int64(len(f.data)), f.mod
		}
		infos = append(infos, info)
	}
	m.store.mu.RUnlock()
	if isFile && k != "" {
		err := m.failErrno("readdir", p, syscall.ENOTDIR)
		done(err)
		return nil, err
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].name < infos[j].name })
	done(nil)
	return infos, nil
}

// Mkdir is a no-op: directories are implicit in the keys. The path is still
// validated.
func (m *Memory) Mkdir(ctx context.Context, p string) error {
	done := m.log.begin(ctx, "mkdir", p)
	_, err := m.key(ctx, "mkdir", p)
	done(err)
	return err
}

// Exists reports whether p is a key or a prefix of keys.
func (m *Memory) Exists(ctx context.Context, p string) (bool, error) {
	done := m.log.begin(ctx, "exists", p)
	_, err := m.stat(ctx, "exists", p)
	if err != nil && CodeOf(err) == CodeKeyNotFound {
		done(nil) // a missing key is an answer, not a failure
		return false, nil
	}
	done(err)
	return err == nil, err
}

// Stat returns synthetic information: a key is a file of its value's size, a
// prefix of keys is a directory.
func (m *Memory) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	done := m.log.begin(ctx, "stat", p)
	fi, err := m.stat(ctx, "stat", p)
	done(err)
	return fi, err
}

// Lstat is Stat: the store has no links.
func (m *Memory) Lstat(ctx context.Context, p string) (fs.FileInfo, error) {
	done := m.log.begin(ctx, "lstat", p)
	fi, err := m.stat(ctx, "lstat", p)
	done(err)
	return fi, err
}

func (m *Memory) stat(ctx context.Context, op, p string) (fs.FileInfo, error) {
	k, err := m.key(ctx, op, p)
	if err != nil {
		return nil, err
	}
	m.store.mu.RLock()
	f, ok := m.store.files[k]
	isDir := !ok && (k == "" || m.store.hasChildren(k))
	m.store.mu.RUnlock()
	name := path.Base("/" + k)
	switch {
	case ok:
		return memInfo{name: name, size: int64(len(f.data)), mod: f.mod}, nil
	case isDir:
		return memInfo{name: name, dir: true}, nil
	}
	return nil, m.notFound(op, p)
}

// Remove deletes the key p; with Recursive also every key below it. A
// prefix with keys below it is not removed without Recursive (ENOTEMPTY).
func (m *Memory) Remove(ctx context.Context, p string, opts RemoveOptions) error {
	done := m.log.begin(ctx, "remove", p)
	err := m.remove(ctx, p, opts)
	done(err)
	return err
}

func (m *Memory) remove(ctx context.Context, p string, opts RemoveOptions) error {
	k, err := m.key(ctx, "remove", p)
	if err != nil {
		return err
	}
	if k == "" {
		return m.failErrno("remove", p, syscall.EBUSY)
	}
	m.store.mu.Lock()
	defer m.store.mu.Unlock()
	_, ok := m.store.files[k]
	if !opts.Recursive {
		if !ok && m.store.hasChildren(k) {
			return m.failErrno("remove", p, syscall.ENOTEMPTY)
		}
		if !ok {
			if opts.Force {
				return nil
			}
			return m.notFound("remove", p)
		}
		m.store.del(k)
		return nil
	}
	removed := ok
	m.store.del(k)
	if m.store.hasChildren(k) {
		pre := k + "/"
		for key := range m.store.files {
			if strings.HasPrefix(key, pre) {
				m.store.del(key)
				removed = true
			}
		}
	}
	if !removed && !opts.Force {
		return m.notFound("remove", p)
	}
	return nil
}

// Rename moves the key oldPath (or every key below the prefix oldPath) to
// newPath, replacing what is there.
func (m *Memory) Rename(ctx context.Context, oldPath, newPath string) error {
	done := m.log.begin2(ctx, "rename", oldPath, newPath)
	err := m.rename(ctx, oldPath, newPath)
	done(err)
	return err
}

func (m *Memory) rename(ctx context.Context, oldPath, newPath string) error {
	from, err := m.key(ctx, "rename", oldPath)
	if err != nil {
		return err
	}
	to, err := m.key(ctx, "rename", newPath)
	if err != nil {
		return err
	}
	if from == "" || to == "" || strings.HasPrefix(to+"/", from+"/") && to != from {
		return m.failErrno("rename", oldPath, syscall.EINVAL)
	}
	m.store.mu.Lock()
	defer m.store.mu.Unlock()
	if m.store.fileAncestor(to) != "" {
		return m.failErrno("rename", newPath, syscall.ENOTDIR)
	}
	if f, ok := m.store.files[from]; ok {
		if m.store.hasChildren(to) {
			return m.failErrno("rename", newPath, syscall.EISDIR)
		}
		m.store.del(from)
		m.store.del(to)
		m.store.set(to, f)
		return nil
	}
	if !m.store.hasChildren(from) {
		return m.notFound("rename", oldPath)
	}
	if _, ok := m.store.files[to]; ok {
		return m.failErrno("rename", newPath, syscall.ENOTDIR)
	}
	pre := from + "/"
	moving := map[string]memFile{}
	for key, f := range m.store.files {
		if rest, ok := strings.CutPrefix(key, pre); ok {
			moving[rest] = f
		}
	}
	for rest, f := range moving {
		m.store.del(pre + rest)
		m.store.del(to + "/" + rest)
		m.store.set(to+"/"+rest, f)
	}
	return nil
}

// Touch stores an empty value at p if it is absent; it never overwrites.
func (m *Memory) Touch(ctx context.Context, p string) error {
	done := m.log.begin(ctx, "touch", p)
	k, err := m.key(ctx, "touch", p)
	if err == nil {
		m.store.mu.Lock()
		if k == "" || m.store.hasChildren(k) {
			err = m.failErrno("touch", p, syscall.EISDIR)
		} else if m.store.fileAncestor(k) != "" {
			err = m.failErrno("touch", p, syscall.ENOTDIR)
		} else if _, ok := m.store.files[k]; !ok {
			m.store.set(k, memFile{data: []byte{}, mod: time.Now()})
		}
		m.store.mu.Unlock()
	}
	done(err)
	return err
}

// RealPath returns the absolute path of p under RootDir (no links exist).
func (m *Memory) RealPath(ctx context.Context, p string) (string, error) {
	done := m.log.begin(ctx, "realpath", p)
	k, err := m.key(ctx, "realpath", p)
	done(err)
	if err != nil {
		return "", err
	}
	return wspath.Join(m.rootDir, strings.TrimPrefix(strings.TrimPrefix(k, m.prefix), "/")), nil
}

// ensureDir validates rel; directories are implicit.
func (m *Memory) ensureDir(ctx context.Context, rel string) error {
	_, err := m.key(ctx, "mkdir", rel)
	return err
}

// Exec is not supported by Memory backends: it fails with an error
// wrapping ErrNotImplemented (ErrDestroyed once destroyed).
func (m *Memory) Exec(ctx context.Context, command string, _ ExecOptions) ([]byte, error) {
	start := time.Now()
	err := m.alive("exec", "")
	if err == nil {
		err = &Error{Code: CodeNotImplemented, Op: "exec", Command: command, Backend: KindMemory, Err: ErrNotImplemented}
	}
	m.log.logExec(ctx, start, command, "", "", err)
	return nil, err
}

// memInfo is the synthetic fs.FileInfo of a key or prefix.
type memInfo struct {
	name string
	size int64
	mod  time.Time
	dir  bool
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
