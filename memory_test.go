package agentbe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

func ctMemWith(t *testing.T, root string, kv ...string) *Memory {
	t.Helper()
	init := map[string][]byte{}
	for i := 0; i+1 < len(kv); i += 2 {
		init[kv[i]] = []byte(kv[i+1])
	}
	return ctMemory(t, MemoryConfig{RootDir: root, Initial: init})
}

// ctKeys returns the raw store keys, sorted.
func ctKeys(m *Memory) []string {
	m.store.mu.RLock()
	defer m.store.mu.RUnlock()
	keys := make([]string, 0, len(m.store.files))
	for k := range m.store.files {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestMemoryConfig(t *testing.T) {
	cases := []struct {
		name    string
		cfg     MemoryConfig
		root    string
		keys    []string
		wantErr bool
	}{
		{name: "zero value", cfg: MemoryConfig{}, root: "/"},
		{name: "rooted", cfg: MemoryConfig{RootDir: "/var/ws/"}, root: "/var/ws"},
		{name: "unclean root", cfg: MemoryConfig{RootDir: "/var//ws/./x/.."}, root: "/var/ws"},
		{name: "relative root", cfg: MemoryConfig{RootDir: "ws"}, wantErr: true},
		{name: "initial keys resolved", cfg: MemoryConfig{RootDir: "/var/ws", Initial: map[string][]byte{
			"a.txt": nil, "/var/ws/b/c.txt": nil, "/etc/passwd": nil, "./d//e": nil,
		}}, root: "/var/ws", keys: []string{"a.txt", "b/c.txt", "d/e", "etc/passwd"}},
		{name: "initial key escapes", cfg: MemoryConfig{Initial: map[string][]byte{"../x": nil}}, wantErr: true},
		{name: "initial key is root", cfg: MemoryConfig{Initial: map[string][]byte{"/": nil}}, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := NewMemory(c.cfg)
			if c.wantErr {
				if !errors.Is(err, ErrInvalidConfig) || CodeOf(err) != CodeInvalidConfiguration {
					t.Fatalf("NewMemory = %v, want INVALID_CONFIGURATION", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer m.Destroy(context.Background())
			if m.RootDir() != c.root {
				t.Errorf("RootDir = %q, want %q", m.RootDir(), c.root)
			}
			if m.Kind() != KindMemory || Executes(m) {
				t.Errorf("Kind = %v, Executes = %v", m.Kind(), Executes(m))
			}
			if got := ctKeys(m); !slices.Equal(got, c.keys) && !(len(got) == 0 && len(c.keys) == 0) {
				t.Errorf("keys = %q, want %q", got, c.keys)
			}
		})
	}
}

func TestMemoryInitialDataCopied(t *testing.T) {
	src := []byte("orig")
	m := ctMemory(t, MemoryConfig{Initial: map[string][]byte{"k": src}})
	src[0] = 'X'
	got, err := m.Read(context.Background(), "k")
	if err != nil || string(got) != "orig" {
		t.Fatalf("Read = %q, %v; want orig (initial data must be copied)", got, err)
	}
}

func TestMemoryReadWrite(t *testing.T) {
	ctx := context.Background()
	m := ctMemWith(t, "/ws", "dir/f.txt", "F")
	cases := []struct {
		name     string
		write    string // path to write "v" to first, if any
		read     string
		want     string
		code     ErrorCode
		notExist bool
		errno    error
	}{
		{name: "existing key", read: "dir/f.txt", want: "F"},
		{name: "absolute under root", read: "/ws/dir/f.txt", want: "F"},
		{name: "other absolute is relative", write: "/etc/passwd", read: "etc/passwd", want: "v"},
		{name: "dot segments", read: "./dir/./f.txt", want: "F"},
		{name: "dotdot inside", read: "dir/x/../f.txt", want: "F"},
		{name: "parents implicit", write: "a/b/c/d.txt", read: "a/b/c/d.txt", want: "v"},
		{name: "missing key", read: "nope", code: CodeKeyNotFound, notExist: true},
		{name: "missing under file", read: "dir/f.txt/x", code: CodeKeyNotFound, notExist: true},
		{name: "prefix is a directory", read: "dir", code: CodeReadFailed, errno: syscall.EISDIR},
		{name: "root is a directory", read: "/", code: CodeReadFailed, errno: syscall.EISDIR},
		{name: "escape", read: "../x", code: CodePathEscape},
		{name: "deep escape", read: "a/b/../../../../etc", code: CodePathEscape},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.write != "" {
				if err := m.Write(ctx, c.write, []byte("v")); err != nil {
					t.Fatalf("Write: %v", err)
				}
			}
			got, err := m.Read(ctx, c.read)
			if c.code == "" {
				if err != nil || string(got) != c.want {
					t.Fatalf("Read(%q) = %q, %v; want %q", c.read, got, err, c.want)
				}
				return
			}
			if CodeOf(err) != c.code {
				t.Fatalf("Read(%q) = %v (code %q), want code %q", c.read, err, CodeOf(err), c.code)
			}
			if c.notExist != errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Read(%q): errors.Is(ErrNotExist) = %v, want %v", c.read, !c.notExist, c.notExist)
			}
			if c.code == CodePathEscape && !errors.Is(err, ErrPathEscape) {
				t.Errorf("Read(%q) = %v, want ErrPathEscape", c.read, err)
			}
			if c.errno != nil && !errors.Is(err, c.errno) {
				t.Errorf("Read(%q) = %v, want %v", c.read, err, c.errno)
			}
		})
	}
}

func TestMemoryWriteErrors(t *testing.T) {
	ctx := context.Background()
	m := ctMemWith(t, "/", "dir/f.txt", "F")
	for _, p := range []string{"dir", "/", ".", ""} {
		if err := m.Write(ctx, p, []byte("x")); !errors.Is(err, syscall.EISDIR) {
			t.Errorf("Write(%q) = %v, want EISDIR", p, err)
		}
	}
	if err := m.Write(ctx, "../x", nil); !errors.Is(err, ErrPathEscape) || CodeOf(err) != CodePathEscape {
		t.Errorf("Write(../x) = %v, want PATH_ESCAPE_ATTEMPT", err)
	}
	if got := ctKeys(m); !slices.Equal(got, []string{"dir/f.txt"}) {
		t.Errorf("failed writes changed the store: %q", got)
	}
}

func TestMemoryCopies(t *testing.T) {
	ctx := context.Background()
	m := ctMemory(t, MemoryConfig{})
	in := []byte("abc")
	if err := m.Write(ctx, "k", in); err != nil {
		t.Fatal(err)
	}
	in[0] = 'X'
	out, _ := m.Read(ctx, "k")
	out[1] = 'Y'
	again, _ := m.Read(ctx, "k")
	if string(again) != "abc" {
		t.Errorf("stored value aliased caller memory: %q", again)
	}
}

func TestMemoryReadDir(t *testing.T) {
	ctx := context.Background()
	m := ctMemWith(t, "/ws",
		"top.txt", "", "a/1", "", "a/2", "", "a/b/3", "", "a/b/c/4", "", "ab/5", "", "z/y/x", "")
	cases := []struct {
		path  string
		want  []string
		errno error
	}{
		{"", []string{"a", "ab", "top.txt", "z"}, nil},
		{".", []string{"a", "ab", "top.txt", "z"}, nil},
		{"/", []string{"a", "ab", "top.txt", "z"}, nil},
		{"/ws", []string{"a", "ab", "top.txt", "z"}, nil},
		{"/ws/", []string{"a", "ab", "top.txt", "z"}, nil},
		{"./", []string{"a", "ab", "top.txt", "z"}, nil},
		{"a", []string{"1", "2", "b"}, nil},
		{"a/", []string{"1", "2", "b"}, nil},
		{"/a", []string{"1", "2", "b"}, nil},
		{"/ws/a", []string{"1", "2", "b"}, nil},
		{"a/b", []string{"3", "c"}, nil},
		{"z", []string{"y"}, nil},
		{"missing", []string{}, nil},
		{"a/1", nil, syscall.ENOTDIR},
		{"top.txt", nil, syscall.ENOTDIR},
		{"../ws", nil, ErrPathEscape},
	}
	for _, c := range cases {
		got, err := m.ReadDir(ctx, c.path)
		if c.errno != nil {
			if !errors.Is(err, c.errno) {
				t.Errorf("ReadDir(%q) = %q, %v; want %v", c.path, got, err, c.errno)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ReadDir(%q) = %q, %v; want %q", c.path, got, err, c.want)
		}
	}
	// The zero-config root "/" as well.
	m2 := ctMemWith(t, "", "x/y", "", "w", "")
	for _, p := range []string{"", ".", "/", "//", "/./"} {
		if got, err := m2.ReadDir(ctx, p); err != nil || !slices.Equal(got, []string{"w", "x"}) {
			t.Errorf("root-'/' ReadDir(%q) = %q, %v", p, got, err)
		}
	}
}

func TestMemoryStat(t *testing.T) {
	ctx := context.Background()
	before := time.Now()
	m := ctMemWith(t, "/", "dir/f.txt", "hello", "empty", "")
	cases := []struct {
		path  string
		name  string
		dir   bool
		size  int64
		isErr bool
	}{
		{path: "dir/f.txt", name: "f.txt", size: 5},
		{path: "/dir/f.txt", name: "f.txt", size: 5},
		{path: "empty", name: "empty", size: 0},
		{path: "dir", name: "dir", dir: true},
		{path: "dir/", name: "dir", dir: true},
		{path: ".", name: "/", dir: true},
		{path: "missing", isErr: true},
		{path: "dir/f.txt/x", isErr: true},
	}
	for _, c := range cases {
		for _, stat := range []func(context.Context, string) (fs.FileInfo, error){m.Stat, m.Lstat} {
			fi, err := stat(ctx, c.path)
			if c.isErr {
				if !errors.Is(err, fs.ErrNotExist) || CodeOf(err) != CodeKeyNotFound {
					t.Errorf("Stat(%q) = %v, want KEY_NOT_FOUND/ErrNotExist", c.path, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("Stat(%q): %v", c.path, err)
				continue
			}
			if fi.IsDir() != c.dir || fi.Mode().IsDir() != c.dir || fi.Mode().IsRegular() == c.dir {
				t.Errorf("Stat(%q): IsDir %v mode %v, want dir=%v", c.path, fi.IsDir(), fi.Mode(), c.dir)
			}
			if c.name != "/" && fi.Name() != c.name {
				t.Errorf("Stat(%q).Name() = %q, want %q", c.path, fi.Name(), c.name)
			}
			if !c.dir && (fi.Size() != c.size || fi.ModTime().Before(before)) {
				t.Errorf("Stat(%q): size %d mod %v, want %d, after %v", c.path, fi.Size(), fi.ModTime(), c.size, before)
			}
		}
	}
	fi1, _ := m.Stat(ctx, "empty")
	time.Sleep(2 * time.Millisecond) // only to make the clock move; no timing is asserted
	m.Write(ctx, "empty", []byte("now 7 b"))
	fi2, _ := m.Stat(ctx, "empty")
	if fi2.Size() != 7 || !fi2.ModTime().After(fi1.ModTime()) {
		t.Errorf("after Write: size %d mod %v (was %v); want 7 and a later mod time", fi2.Size(), fi2.ModTime(), fi1.ModTime())
	}
}

func TestMemoryExists(t *testing.T) {
	ctx := context.Background()
	m := ctMemWith(t, "/", "a/b", "x")
	cases := []struct {
		path string
		want bool
		err  error
	}{
		{"a/b", true, nil}, {"a", true, nil}, {"/", true, nil}, {".", true, nil},
		{"a/c", false, nil}, {"nope", false, nil}, {"a/b/c", false, nil},
		{"../a", false, ErrPathEscape},
	}
	for _, c := range cases {
		got, err := m.Exists(ctx, c.path)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("Exists(%q) = %v, %v; want error %v", c.path, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Exists(%q) = %v, %v; want %v", c.path, got, err, c.want)
		}
	}
}

func TestMemoryRemove(t *testing.T) {
	ctx := context.Background()
	base := []string{"a", "A", "a/1", "1", "a/b/2", "2", "ab", "AB", "ab/3", "3", "x", "X"}
	cases := []struct {
		name  string
		path  string
		opts  RemoveOptions
		keys  []string // remaining keys
		code  ErrorCode
		errIs error
	}{
		{name: "file", path: "x", keys: []string{"a", "a/1", "a/b/2", "ab", "ab/3"}},
		{name: "missing", path: "nope", code: CodeKeyNotFound, errIs: fs.ErrNotExist},
		{name: "missing forced", path: "nope", opts: RemoveOptions{Force: true}},
		{name: "missing recursive forced", path: "nope/x", opts: RemoveOptions{Recursive: true, Force: true}},
		{name: "missing recursive", path: "nope", opts: RemoveOptions{Recursive: true}, code: CodeKeyNotFound, errIs: fs.ErrNotExist},
		{name: "key with children, not recursive", path: "a", keys: []string{"a/1", "a/b/2", "ab", "ab/3", "x"}},
		{name: "prefix only, not recursive", path: "a/b", code: CodeWriteFailed, errIs: syscall.ENOTEMPTY},
		{name: "recursive key and prefix", path: "a", opts: RemoveOptions{Recursive: true},
			keys: []string{"ab", "ab/3", "x"}},
		{name: "recursive prefix only", path: "a/b", opts: RemoveOptions{Recursive: true},
			keys: []string{"a", "a/1", "ab", "ab/3", "x"}},
		{name: "recursive absolute", path: "/ab/", opts: RemoveOptions{Recursive: true},
			keys: []string{"a", "a/1", "a/b/2", "x"}},
		{name: "root refused", path: "/", opts: RemoveOptions{Recursive: true, Force: true}, errIs: syscall.EBUSY},
		{name: "escape", path: "../a", opts: RemoveOptions{Recursive: true, Force: true}, code: CodePathEscape, errIs: ErrPathEscape},
	}
	all := []string{"a", "a/1", "a/b/2", "ab", "ab/3", "x"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := ctMemWith(t, "/", base...)
			err := m.Remove(ctx, c.path, c.opts)
			if c.code != "" || c.errIs != nil {
				if c.code != "" && CodeOf(err) != c.code {
					t.Errorf("Remove(%q) = %v, want code %q", c.path, err, c.code)
				}
				if c.errIs != nil && !errors.Is(err, c.errIs) {
					t.Errorf("Remove(%q) = %v, want %v", c.path, err, c.errIs)
				}
				if got := ctKeys(m); !slices.Equal(got, all) {
					t.Errorf("failed Remove changed keys: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Remove(%q): %v", c.path, err)
			}
			want := c.keys
			if want == nil {
				want = all
			}
			if got := ctKeys(m); !slices.Equal(got, want) {
				t.Errorf("keys after Remove(%q) = %q, want %q", c.path, got, want)
			}
		})
	}
}

func TestMemoryMkdirNoop(t *testing.T) {
	ctx := context.Background()
	m := ctMemWith(t, "/", "f", "x")
	for _, p := range []string{"d", "d/e/f", "/abs/dir", ".", "f"} {
		if err := m.Mkdir(ctx, p); err != nil {
			t.Errorf("Mkdir(%q) = %v", p, err)
		}
	}
	if got := ctKeys(m); !slices.Equal(got, []string{"f"}) {
		t.Errorf("Mkdir created keys: %q", got)
	}
	if names, _ := m.ReadDir(ctx, "."); !slices.Equal(names, []string{"f"}) {
		t.Errorf("ReadDir after Mkdir = %q", names)
	}
	if err := m.Mkdir(ctx, "../d"); !errors.Is(err, ErrPathEscape) {
		t.Errorf("Mkdir(../d) = %v, want ErrPathEscape", err)
	}
}

func TestMemoryTouch(t *testing.T) {
	ctx := context.Background()
	m := ctMemWith(t, "/", "keep", "content", "dir/x", "1")
	cases := []struct {
		path  string
		want  string
		errIs error
	}{
		{path: "new", want: ""},
		{path: "deep/new/file", want: ""},
		{path: "keep", want: "content"},
		{path: "/keep", want: "content"},
		{path: "dir", errIs: syscall.EISDIR},
		{path: "/", errIs: syscall.EISDIR},
		{path: "../x", errIs: ErrPathEscape},
	}
	for _, c := range cases {
		err := m.Touch(ctx, c.path)
		if c.errIs != nil {
			if !errors.Is(err, c.errIs) {
				t.Errorf("Touch(%q) = %v, want %v", c.path, err, c.errIs)
			}
			continue
		}
		if err != nil {
			t.Errorf("Touch(%q): %v", c.path, err)
			continue
		}
		got, err := m.Read(ctx, c.path)
		if err != nil || string(got) != c.want || got == nil {
			t.Errorf("after Touch(%q): Read = %q (nil=%v), %v; want %q", c.path, got, got == nil, err, c.want)
		}
	}
}

func TestMemoryRename(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		from, to string
		keys     []string
		errIs    error
	}{
		{name: "file", from: "f", to: "g", keys: []string{"d/1", "d/e/2", "g"}},
		{name: "file into new dir", from: "f", to: "n/m/g", keys: []string{"d/1", "d/e/2", "n/m/g"}},
		{name: "prefix", from: "d", to: "z", keys: []string{"f", "z/1", "z/e/2"}},
		{name: "onto existing file", from: "d/1", to: "f", keys: []string{"d/e/2", "f"}},
		{name: "missing", from: "nope", to: "x", errIs: fs.ErrNotExist},
		{name: "into itself", from: "d", to: "d/e/x", errIs: syscall.EINVAL},
		{name: "root", from: "/", to: "x", errIs: syscall.EINVAL},
		{name: "escape from", from: "../f", to: "x", errIs: ErrPathEscape},
		{name: "escape to", from: "f", to: "../x", errIs: ErrPathEscape},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := ctMemWith(t, "/", "f", "F", "d/1", "1", "d/e/2", "2")
			err := m.Rename(ctx, c.from, c.to)
			if c.errIs != nil {
				if !errors.Is(err, c.errIs) {
					t.Errorf("Rename = %v, want %v", err, c.errIs)
				}
				if got := ctKeys(m); !slices.Equal(got, []string{"d/1", "d/e/2", "f"}) {
					t.Errorf("failed Rename changed keys: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ctKeys(m); !slices.Equal(got, c.keys) {
				t.Errorf("keys = %q, want %q", got, c.keys)
			}
		})
	}
}

func TestMemoryOpenCreate(t *testing.T) {
	ctx := context.Background()
	m := ctMemWith(t, "/", "f", "stream me")
	rc, err := m.Open(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "stream me" {
		t.Errorf("Open read %q", data)
	}
	if _, err := m.Open(ctx, "missing"); !errors.Is(err, fs.ErrNotExist) || CodeOf(err) != CodeKeyNotFound {
		t.Errorf("Open(missing) = %v", err)
	}

	w, err := m.Create(ctx, "new/file")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "part1 ")
	if ok, _ := m.Exists(ctx, "new/file"); ok {
		t.Error("Create content visible before Close")
	}
	io.WriteString(w, "part2")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	if got, _ := m.Read(ctx, "new/file"); string(got) != "part1 part2" {
		t.Errorf("after Create: %q", got)
	}

	cctx, cancel := context.WithCancel(ctx)
	w, err = m.Create(cctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "replacement")
	cancel()
	if err := w.Close(); !errors.Is(err, context.Canceled) {
		t.Errorf("Close after cancel = %v, want context.Canceled", err)
	}
	if got, _ := m.Read(ctx, "f"); string(got) != "stream me" {
		t.Errorf("abandoned Create replaced content: %q", got)
	}
	if _, err := m.Create(ctx, "../x"); !errors.Is(err, ErrPathEscape) {
		t.Errorf("Create(../x) = %v", err)
	}
}

func TestMemoryExecNotImplemented(t *testing.T) {
	m := ctMemory(t, MemoryConfig{})
	s := ctScope(t, m, "s")
	for name, b := range map[string]Backend{"memory": m, "scope": s} {
		out, err := b.Exec(context.Background(), "echo hi", ExecOptions{})
		var e *Error
		if out != nil || !errors.Is(err, ErrNotImplemented) || !errors.As(err, &e) {
			t.Fatalf("%s: Exec = %q, %v; want ErrNotImplemented", name, out, err)
		}
		if e.Code != CodeNotImplemented || e.Op != "exec" || e.Backend != KindMemory {
			t.Errorf("%s: error %+v lacks op/backend", name, e)
		}
	}
}

func TestMemoryCanceledContext(t *testing.T) {
	m := ctMemWith(t, "/", "f", "x")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Read(ctx, "f"); !errors.Is(err, context.Canceled) {
		t.Errorf("Read with cancelled ctx = %v", err)
	}
	if err := m.Write(ctx, "g", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Write with cancelled ctx = %v", err)
	}
	if got := ctKeys(m); !slices.Equal(got, []string{"f"}) {
		t.Errorf("keys = %q", got)
	}
}

func TestMemoryScopes(t *testing.T) {
	ctx := context.Background()
	m := ctMemWith(t, "/ws", "users/u10/x", "other tenant", "top", "t")
	s := ctScope(t, m, "users/u1")
	if s.RootDir() != "/ws/users/u1" || s.Kind() != KindMemory || s.Path() != "users/u1" {
		t.Errorf("scope RootDir %q Kind %v Path %q", s.RootDir(), s.Kind(), s.Path())
	}
	for p, v := range map[string]string{"a": "1", "/b": "2", "/ws/users/u1/c/d": "3", "/ws/e": "4"} {
		if err := s.Write(ctx, p, []byte(v)); err != nil {
			t.Fatalf("scope Write(%q): %v", p, err)
		}
	}
	want := []string{"top", "users/u1/a", "users/u1/b", "users/u1/c/d", "users/u1/ws/e", "users/u10/x"}
	if got := ctKeys(m); !slices.Equal(got, want) {
		t.Errorf("keys = %q, want %q", got, want)
	}
	if names, _ := s.ReadDir(ctx, "/"); !slices.Equal(names, []string{"a", "b", "c", "ws"}) {
		t.Errorf("scope ReadDir(/) = %q", names)
	}
	if names, _ := m.ReadDir(ctx, "users"); !slices.Equal(names, []string{"u1", "u10"}) {
		t.Errorf("parent ReadDir(users) = %q", names)
	}
	for _, p := range []string{"../u10/x", "../../top", "c/../../u10/x", "/ws/users/u1/../u10/x"} {
		if _, err := s.Read(ctx, p); !errors.Is(err, ErrPathEscape) {
			t.Errorf("scope Read(%q) = %v, want ErrPathEscape", p, err)
		}
	}
	if _, err := s.Read(ctx, "/ws/users/u10/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("scope Read of sibling via absolute path = %v, want not found inside the scope", err)
	}
	fi, err := s.Stat(ctx, ".")
	if err != nil || !fi.IsDir() {
		t.Errorf("scope Stat(.) = %v, %v", fi, err)
	}
	// Recursive removal of the scope's content does not touch u10 (same
	// string prefix, different directory).
	if err := s.Remove(ctx, "c", RemoveOptions{Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, "users/u1", RemoveOptions{Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if got := ctKeys(m); !slices.Equal(got, []string{"top", "users/u10/x"}) {
		t.Errorf("keys after removals = %q", got)
	}

	n := ctScope(t, s, "n/m")
	if n.RootDir() != "/ws/users/u1/n/m" || n.Path() != "users/u1/n/m" {
		t.Errorf("nested RootDir %q Path %q", n.RootDir(), n.Path())
	}
	n.Touch(ctx, "t")
	if ok, _ := m.Exists(ctx, "users/u1/n/m/t"); !ok {
		t.Error("nested scope Touch did not land under the joined prefix")
	}
	if _, err := n.Read(ctx, "../x"); !errors.Is(err, ErrPathEscape) {
		t.Errorf("nested escape: %v", err)
	}
	if _, err := m.Scope("../x", ScopeOptions{}); !errors.Is(err, ErrPathEscape) || CodeOf(err) != CodePathEscape {
		t.Errorf("Scope(../x) = %v", err)
	}
	if _, err := s.Scope("../../x", ScopeOptions{}); !errors.Is(err, ErrPathEscape) {
		t.Errorf("nested Scope(../../x) = %v", err)
	}
	// Errors name the path as the scope's caller gave it.
	_, err = n.Read(ctx, "missing")
	var e *Error
	if !errors.As(err, &e) || e.Path != "missing" || CodeOf(err) != CodeKeyNotFound {
		t.Errorf("scope error %v: want KEY_NOT_FOUND naming %q", err, "missing")
	}
}

func TestMemoryConcurrent(t *testing.T) {
	ctx := context.Background()
	m := ctMemory(t, MemoryConfig{})
	s := ctScope(t, m, "scoped")
	const workers, perWorker = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker*4)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b Backend = m
			if w%2 == 1 {
				b = s
			}
			for i := range perWorker {
				p := fmt.Sprintf("w%d/f%d", w, i)
				v := []byte(p)
				if err := b.Write(ctx, p, v); err != nil {
					errs <- err
					continue
				}
				if got, err := b.Read(ctx, p); err != nil || string(got) != p {
					errs <- fmt.Errorf("Read(%s) = %q, %v", p, got, err)
				}
				if _, err := b.ReadDir(ctx, fmt.Sprintf("w%d", w)); err != nil {
					errs <- err
				}
				if _, err := b.Stat(ctx, "."); err != nil {
					errs <- err
				}
				b.Touch(ctx, fmt.Sprintf("w%d/t", w))
				if i%5 == 0 {
					if err := b.Remove(ctx, p, RemoveOptions{}); err != nil {
						errs <- err
					}
				}
				m.ReadDir(ctx, ".")
				m.Exists(ctx, "scoped")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Each worker keeps 40 files and its touched "t".
	if n := len(ctKeys(m)); n != workers*(perWorker-perWorker/5+1) {
		t.Errorf("store holds %d keys, want %d", n, workers*(perWorker-perWorker/5+1))
	}
	if names, _ := m.ReadDir(ctx, "."); !slices.Equal(names, []string{"scoped", "w0", "w2", "w4", "w6"}) {
		t.Errorf("root listing %q", names)
	}
}
