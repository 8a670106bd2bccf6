package agentbe

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"text/template"
)

// ctFiles is the tree every FS test backend holds.
var ctFiles = map[string]string{
	"hello.txt":          "hello, world\n",
	"dir/a.txt":          "A",
	"dir/sub/b.txt":      "BB",
	"dir/sub/deep/c.txt": "CCC",
	"tmpl/base.tmpl":     `{{define "base"}}<h1>{{.}}</h1>{{template "body" .}}{{end}}`,
	"tmpl/page.tmpl":     `{{define "body"}}<p>page {{.}}</p>{{end}}`,
	"big.bin":            strings.Repeat("0123456789", 1000),
}

// ctLocal returns a Local backend on a fresh directory (isolation none, so
// no external tool is needed) and destroys it at cleanup.
func ctLocal(t testing.TB, cfg LocalConfig) *Local {
	t.Helper()
	if cfg.RootDir == "" {
		cfg.RootDir = t.TempDir()
	}
	if cfg.Isolation == "" {
		cfg.Isolation = IsolationNone
	}
	l, err := NewLocal(cfg)
	if err != nil {
		t.Fatalf("NewLocal: %v", err)
	}
	t.Cleanup(func() { _ = l.Destroy(context.Background()) })
	return l
}

func ctMemory(t testing.TB, cfg MemoryConfig) *Memory {
	t.Helper()
	m, err := NewMemory(cfg)
	if err != nil {
		t.Fatalf("NewMemory: %v", err)
	}
	t.Cleanup(func() { _ = m.Destroy(context.Background()) })
	return m
}

func ctScope(t testing.TB, b Backend, p string) *Scope {
	t.Helper()
	s, err := b.Scope(p, ScopeOptions{})
	if err != nil {
		t.Fatalf("Scope(%q): %v", p, err)
	}
	return s
}

func ctFill(t testing.TB, b Backend, files map[string]string) {
	t.Helper()
	for p, c := range files {
		if err := b.Write(context.Background(), p, []byte(c)); err != nil {
			t.Fatalf("Write(%q): %v", p, err)
		}
	}
}

// ctFSBackends returns the backends the FS tests run on, each holding
// ctFiles at its root.
func ctFSBackends(t *testing.T) map[string]Backend {
	t.Helper()
	out := map[string]Backend{}

	l := ctLocal(t, LocalConfig{})
	ctFill(t, l, ctFiles)
	out["local"] = l

	init := map[string][]byte{}
	for p, c := range ctFiles {
		init[p] = []byte(c)
	}
	out["memory"] = ctMemory(t, MemoryConfig{Initial: init})
	out["memory-rooted"] = ctMemory(t, MemoryConfig{RootDir: "/var/ws", Initial: init})

	l2 := ctLocal(t, LocalConfig{})
	ctFill(t, l2, map[string]string{"users/other/secret.txt": "no"})
	ls := ctScope(t, l2, "users/u1")
	ctFill(t, ls, ctFiles)
	out["local-scope"] = ls

	m2 := ctMemory(t, MemoryConfig{Initial: map[string][]byte{"users/other/secret.txt": []byte("no")}})
	ms := ctScope(t, m2, "users/u1")
	ctFill(t, ms, ctFiles)
	out["memory-scope"] = ms

	l3 := ctLocal(t, LocalConfig{})
	outer := ctScope(t, l3, "a")
	inner := ctScope(t, outer, "b/c")
	ctFill(t, inner, ctFiles)
	ctFill(t, outer, map[string]string{"sibling.txt": "no"})
	out["local-nested-scope"] = inner
	return out
}

func ctSortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestFSConformance(t *testing.T) {
	for name, b := range ctFSBackends(t) {
		t.Run(name, func(t *testing.T) {
			if err := fstest.TestFS(FS(b), ctSortedKeys(ctFiles)...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestFSInterfaces(t *testing.T) {
	fsys := FS(ctMemory(t, MemoryConfig{}))
	if _, ok := fsys.(fs.StatFS); !ok {
		t.Error("not an fs.StatFS")
	}
	if _, ok := fsys.(fs.ReadDirFS); !ok {
		t.Error("not an fs.ReadDirFS")
	}
	if _, ok := fsys.(fs.ReadFileFS); !ok {
		t.Error("not an fs.ReadFileFS")
	}
}

func TestFSInvalidNames(t *testing.T) {
	names := []string{"", "/hello.txt", "../hello.txt", "dir/../hello.txt", "./hello.txt",
		"dir//a.txt", "dir/", "..", "/", "dir/./a.txt", "a\\..\\b/../.."}
	for name, b := range ctFSBackends(t) {
		fsys := FS(b)
		for _, n := range names {
			if !fs.ValidPath(n) {
				ops := map[string]func() error{
					"Open":     func() error { _, err := fsys.Open(n); return err },
					"Stat":     func() error { _, err := fs.Stat(fsys, n); return err },
					"ReadFile": func() error { _, err := fs.ReadFile(fsys, n); return err },
					"ReadDir":  func() error { _, err := fs.ReadDir(fsys, n); return err },
				}
				for op, fn := range ops {
					err := fn()
					var pe *fs.PathError
					if !errors.Is(err, fs.ErrInvalid) || !errors.As(err, &pe) || pe.Path != n {
						t.Errorf("%s: %s(%q) = %v, want *fs.PathError wrapping fs.ErrInvalid", name, op, n, err)
					}
				}
			}
		}
	}
}

func TestFSNotExist(t *testing.T) {
	for name, b := range ctFSBackends(t) {
		fsys := FS(b)
		for _, n := range []string{"missing", "dir/missing", "missing/x", "users/other/secret.txt", "sibling.txt"} {
			if _, err := fsys.Open(n); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: Open(%q) = %v, want ErrNotExist", name, n, err)
			}
			if _, err := fs.Stat(fsys, n); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: Stat(%q) = %v, want ErrNotExist", name, n, err)
			}
			if _, err := fs.ReadFile(fsys, n); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: ReadFile(%q) = %v, want ErrNotExist", name, n, err)
			}
			if _, err := fs.ReadDir(fsys, n); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: ReadDir(%q) = %v, want ErrNotExist", name, n, err)
			}
		}
		_, err := fsys.Open("missing")
		var be *Error
		if !errors.As(err, &be) {
			t.Errorf("%s: Open error %v does not carry an *Error", name, err)
		}
	}
}

func TestFSReadDirOnFile(t *testing.T) {
	for name, b := range ctFSBackends(t) {
		if _, err := fs.ReadDir(FS(b), "hello.txt"); err == nil {
			t.Errorf("%s: ReadDir of a file succeeded", name)
		}
	}
}

func TestFSWalkDir(t *testing.T) {
	want := []string{".", "big.bin", "dir", "dir/a.txt", "dir/sub", "dir/sub/b.txt", "dir/sub/deep",
		"dir/sub/deep/c.txt", "hello.txt", "tmpl", "tmpl/base.tmpl", "tmpl/page.tmpl"}
	for name, b := range ctFSBackends(t) {
		var got []string
		err := fs.WalkDir(FS(b), ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			got = append(got, p)
			if p != "." && d.Name() != filepath.Base(p) {
				t.Errorf("%s: entry %q named %q", name, p, d.Name())
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: WalkDir: %v", name, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: WalkDir = %q, want %q", name, got, want)
		}
	}
}

func TestFSTemplateParseFS(t *testing.T) {
	for name, b := range ctFSBackends(t) {
		tmpl, err := template.ParseFS(FS(b), "tmpl/*.tmpl")
		if err != nil {
			t.Fatalf("%s: ParseFS: %v", name, err)
		}
		var sb strings.Builder
		if err := tmpl.ExecuteTemplate(&sb, "base", "x"); err != nil {
			t.Fatalf("%s: Execute: %v", name, err)
		}
		if got, want := sb.String(), "<h1>x</h1><p>page x</p>"; got != want {
			t.Errorf("%s: template output %q, want %q", name, got, want)
		}
	}
}

func TestFSHTTPFileServer(t *testing.T) {
	for name, b := range ctFSBackends(t) {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.FileServer(http.FS(FS(b))))
			defer srv.Close()
			get := func(p string, hdr map[string]string) (int, string) {
				t.Helper()
				req, err := http.NewRequest("GET", srv.URL+p, nil)
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range hdr {
					req.Header.Set(k, v)
				}
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				return resp.StatusCode, string(body)
			}
			cases := []struct {
				path     string
				hdr      map[string]string
				code     int
				body     string // exact body, or
				contains string // a substring of it
			}{
				{path: "/hello.txt", code: 200, body: "hello, world\n"},
				{path: "/dir/sub/b.txt", code: 200, body: "BB"},
				{path: "/hello.txt", hdr: map[string]string{"Range": "bytes=7-11"}, code: 206, body: "world"},
				{path: "/big.bin", hdr: map[string]string{"Range": "bytes=9995-"}, code: 206, body: "56789"},
				{path: "/big.bin", hdr: map[string]string{"Range": "bytes=-3"}, code: 206, body: "789"},
				{path: "/missing.txt", code: 404},
				{path: "/../../etc/passwd", code: 404},
				{path: "/users/other/secret.txt", code: 404},
				{path: "/dir/", code: 200, contains: `<a href="a.txt">a.txt</a>`},
				{path: "/", code: 200, contains: `<a href="dir/">dir/</a>`},
			}
			for _, c := range cases {
				code, body := get(c.path, c.hdr)
				if code != c.code {
					t.Errorf("GET %s %v: status %d, want %d (body %q)", c.path, c.hdr, code, c.code, body)
					continue
				}
				if c.body != "" && body != c.body {
					t.Errorf("GET %s %v: body %q, want %q", c.path, c.hdr, body, c.body)
				}
				if c.contains != "" && !strings.Contains(body, c.contains) {
					t.Errorf("GET %s: body %q lacks %q", c.path, body, c.contains)
				}
			}
		})
	}
}

func TestFSOpenDirReadDirBatches(t *testing.T) {
	for name, b := range ctFSBackends(t) {
		f, err := FS(b).Open("dir")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d, ok := f.(fs.ReadDirFile)
		if !ok {
			t.Fatalf("%s: Open(dir) is %T, not an fs.ReadDirFile", name, f)
		}
		if _, err := d.Read(make([]byte, 1)); err == nil {
			t.Errorf("%s: Read on a directory succeeded", name)
		}
		var got []string
		for {
			ents, err := d.ReadDir(1)
			if err == io.EOF {
				if len(ents) != 0 {
					t.Errorf("%s: entries returned with io.EOF", name)
				}
				break
			}
			if err != nil || len(ents) != 1 {
				t.Fatalf("%s: ReadDir(1) = %d entries, %v", name, len(ents), err)
			}
			got = append(got, ents[0].Name()+map[bool]string{true: "/"}[ents[0].IsDir()])
		}
		if want := []string{"a.txt", "sub/"}; !slices.Equal(got, want) {
			t.Errorf("%s: batched ReadDir = %q, want %q", name, got, want)
		}
		if ents, err := d.ReadDir(-1); err != nil || len(ents) != 0 {
			t.Errorf("%s: ReadDir(-1) at end = %d, %v; want 0, nil", name, len(ents), err)
		}
		if err := d.Close(); err != nil {
			t.Errorf("%s: Close: %v", name, err)
		}
		if err := d.Close(); !errors.Is(err, fs.ErrClosed) {
			t.Errorf("%s: second Close = %v, want ErrClosed", name, err)
		}
		if _, err := d.ReadDir(-1); !errors.Is(err, fs.ErrClosed) {
			t.Errorf("%s: ReadDir after Close = %v, want ErrClosed", name, err)
		}
	}
}

func TestFSFileSeek(t *testing.T) {
	for name, b := range ctFSBackends(t) {
		f, err := FS(b).Open("hello.txt")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s := f.(io.ReadSeeker)
		steps := []struct {
			off    int64
			whence int
			pos    int64
			read   string
		}{
			{7, io.SeekStart, 7, "world"},
			{-5, io.SeekCurrent, 7, "wor"},
			{0, io.SeekStart, 0, "hello"},
			{-6, io.SeekEnd, 7, "world\n"},
			{2, io.SeekStart, 2, "llo"},
			{100, io.SeekStart, 100, ""},
		}
		for _, st := range steps {
			pos, err := s.Seek(st.off, st.whence)
			if err != nil || pos != st.pos {
				t.Fatalf("%s: Seek(%d,%d) = %d, %v; want %d", name, st.off, st.whence, pos, err, st.pos)
			}
			buf := make([]byte, len(st.read))
			n, _ := io.ReadFull(s, buf)
			if got := string(buf[:n]); got != st.read {
				t.Errorf("%s: after Seek(%d,%d) read %q, want %q", name, st.off, st.whence, got, st.read)
			}
		}
		if _, err := s.Seek(-1, io.SeekStart); err == nil {
			t.Errorf("%s: negative Seek succeeded", name)
		}
		if err := f.Close(); err != nil {
			t.Errorf("%s: Close: %v", name, err)
		}
		if _, err := f.Read(make([]byte, 1)); !errors.Is(err, fs.ErrClosed) {
			t.Errorf("%s: Read after Close = %v, want ErrClosed", name, err)
		}
	}
}

// TestFSSymlinks checks that the FS view of a Local workspace follows links
// inside it, refuses links leading out (of the workspace or of a scope), and
// lists links as links.
func TestFSSymlinks(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := ctLocal(t, LocalConfig{RootDir: dir})
	ctFill(t, l, map[string]string{"s/file.txt": "inside", "other/x.txt": "sibling"})
	links := map[string]string{
		"s/rel-link":     "file.txt",
		"s/abs-link":     filepath.Join(dir, "s", "file.txt"),
		"s/out-link":     filepath.Join(outside, "secret"),
		"s/etc":          "/etc",
		"s/sibling-link": "../other/x.txt",
		"s/dir-out":      outside,
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	rootFS := FS(l)
	scopeFS := FS(ctScope(t, l, "s"))
	cases := []struct {
		fsys    fs.FS
		name    string
		content string // "" means it must fail with ErrPathEscape
	}{
		{rootFS, "s/rel-link", "inside"},
		{rootFS, "s/abs-link", "inside"},
		{rootFS, "s/sibling-link", "sibling"},
		{rootFS, "s/out-link", ""},
		{rootFS, "s/etc/passwd", ""},
		{rootFS, "s/dir-out/secret", ""},
		{scopeFS, "rel-link", "inside"},
		{scopeFS, "abs-link", "inside"},
		{scopeFS, "sibling-link", ""},
		{scopeFS, "out-link", ""},
		{scopeFS, "etc/passwd", ""},
	}
	for _, c := range cases {
		data, err := fs.ReadFile(c.fsys, c.name)
		f, oerr := c.fsys.Open(c.name)
		if oerr == nil {
			f.Close()
		}
		if c.content == "" {
			if !errors.Is(err, ErrPathEscape) || !errors.Is(oerr, ErrPathEscape) {
				t.Errorf("%s: ReadFile = %q, %v; Open: %v; want ErrPathEscape", c.name, data, err, oerr)
			}
			if strings.Contains(string(data), "secret") {
				t.Errorf("%s: leaked host content", c.name)
			}
			continue
		}
		if err != nil || string(data) != c.content || oerr != nil {
			t.Errorf("%s: ReadFile = %q, %v; Open: %v; want %q", c.name, data, err, oerr, c.content)
		}
	}

	ents, err := fs.ReadDir(scopeFS, ".")
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]fs.FileMode{}
	for _, e := range ents {
		types[e.Name()] = e.Type()
	}
	for _, n := range []string{"rel-link", "out-link", "etc", "dir-out"} {
		if types[n] != fs.ModeSymlink {
			t.Errorf("entry %s has type %v, want symlink", n, types[n])
		}
	}
	// WalkDir never follows links, so walking the scope cannot leave it.
	err = fs.WalkDir(scopeFS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(p, "etc/") || strings.HasPrefix(p, "dir-out/") {
			t.Errorf("WalkDir descended into link %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFSAfterDestroy(t *testing.T) {
	for name, b := range map[string]Backend{
		"local":  ctLocal(t, LocalConfig{}),
		"memory": ctMemory(t, MemoryConfig{Initial: map[string][]byte{"f": []byte("x")}}),
	} {
		ctFill(t, b, map[string]string{"f": "x"})
		fsys := FS(b)
		if err := b.Destroy(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := fsys.Open("f"); !errors.Is(err, ErrDestroyed) {
			t.Errorf("%s: Open after Destroy = %v, want ErrDestroyed", name, err)
		}
		if _, err := fs.ReadDir(fsys, "."); !errors.Is(err, ErrDestroyed) {
			t.Errorf("%s: ReadDir after Destroy = %v, want ErrDestroyed", name, err)
		}
	}
}

// TestScopeRealPathBeforeFirstWrite: RealPath promises that missing
// elements are fine ("the final element need not exist"; on the root, even
// "a/b/x" with a missing "a" resolves). A scope whose directory is not
// created yet (it is created on the first write) must resolve the same way
// instead of failing with ENOENT.
func TestScopeRealPathBeforeFirstWrite(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{})
	if got, err := l.RealPath(ctx, "q/r/x"); err != nil || got != filepath.Join(l.RootDir(), "q/r/x") {
		t.Fatalf("root RealPath(q/r/x) = %q, %v", got, err)
	}
	for _, sp := range []string{"a", "q/r"} {
		s := ctScope(t, l, sp)
		got, err := s.RealPath(ctx, "x")
		if want := filepath.Join(l.RootDir(), sp, "x"); err != nil || got != want {
			t.Errorf("fresh scope %q: RealPath(x) = %q, %v; want %q", sp, got, err, want)
		}
	}
}

// FuzzFSOpen: whatever name io/fs callers pass, the FS view of a scope never
// yields content from outside the scope (a sibling directory or a host file
// reached through a link), and invalid names are refused with ErrInvalid.
func FuzzFSOpen(f *testing.F) {
	for _, s := range []string{".", "in.txt", "../secret.txt", "sub/../../secret.txt", "/etc/passwd",
		"link-out/secret.txt", "link-sib", "sub/in2.txt", "a//b", "./in.txt", "..", "sub/.", "\x00", "link-abs"} {
		f.Add(s)
	}
	dir := f.TempDir()
	outside := f.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("SECRET"), 0o644)
	l := ctLocal(f, LocalConfig{RootDir: dir})
	ctFill(f, l, map[string]string{"secret.txt": "SECRET", "s/in.txt": "in", "s/sub/in2.txt": "in2"})
	os.Symlink(outside, filepath.Join(dir, "s", "link-out"))
	os.Symlink("../secret.txt", filepath.Join(dir, "s", "link-sib"))
	os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(dir, "s", "link-abs"))
	m := ctMemory(f, MemoryConfig{Initial: map[string][]byte{"secret.txt": []byte("SECRET"), "s/in.txt": []byte("in")}})
	views := []fs.FS{FS(ctScope(f, l, "s")), FS(ctScope(f, m, "s"))}
	f.Fuzz(func(t *testing.T, name string) {
		for _, fsys := range views {
			data, err := fs.ReadFile(fsys, name)
			if strings.Contains(string(data), "SECRET") {
				t.Fatalf("ReadFile(%q) escaped the scope: %q", name, data)
			}
			if !fs.ValidPath(name) && !errors.Is(err, fs.ErrInvalid) {
				t.Fatalf("ReadFile(%q) = %v, want ErrInvalid", name, err)
			}
			if fl, err := fsys.Open(name); err == nil {
				b, _ := io.ReadAll(io.LimitReader(fl, 1<<20))
				fl.Close()
				if strings.Contains(string(b), "SECRET") {
					t.Fatalf("Open(%q) escaped the scope", name)
				}
			}
			if ents, err := fs.ReadDir(fsys, name); err == nil {
				for _, e := range ents {
					if e.Name() == "secret.txt" {
						t.Fatalf("ReadDir(%q) listed a file outside the scope", name)
					}
				}
			}
		}
	})
}
