package agentbe

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// escapeFixture is a workspace beside an outside directory holding a canary,
// with two tenant scopes (u1 and its sibling u2) and links pointing out of
// the workspace and out of u1.
type escapeFixture struct {
	base, ws string
}

func newEscapeFixture(t *testing.T) escapeFixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := escapeFixture{base: base, ws: filepath.Join(base, "ws")}
	for _, d := range []string{"outside", "ws/users/u1/dir", "ws/users/u2", "ws/dir"} {
		mustOK(t, os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	mustOK(t, os.WriteFile(filepath.Join(base, "outside/canary"), []byte("CANARY-OUTSIDE\n"), 0o644))
	mustOK(t, os.WriteFile(filepath.Join(f.ws, "users/u2/secret"), []byte("CANARY-SIBLING\n"), 0o644))
	// Links exist both at the workspace root and inside u1.
	for _, dir := range []string{f.ws, filepath.Join(f.ws, "users/u1")} {
		links := map[string]string{
			"link_out_abs":      filepath.Join(base, "outside"),
			"link_out_rel":      "../outside",
			"link_canary":       filepath.Join(base, "outside/canary"),
			"link_dangling_out": filepath.Join(base, "outside/newfile"),
			"link_sibling":      filepath.Join(f.ws, "users/u2"),
			"link_up":           "..",
			"dir/link_upup":     "../..",
			"loop_a":            "loop_b",
			"loop_b":            "loop_a",
			"link_root":         "/",
		}
		if dir != f.ws {
			links["link_out_rel"] = "../../../outside"
			links["link_up"] = "../.."
		}
		for name, target := range links {
			mustOK(t, os.Symlink(target, filepath.Join(dir, name)))
		}
	}
	return f
}

// snapshot hashes every entry outside the area a backend may change.
func (f escapeFixture) snapshot(t *testing.T, writable string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(f.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == writable || strings.HasPrefix(p, writable+string(filepath.Separator)) {
			if p != writable && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		sum := fi.Mode().String() + fi.ModTime().String()
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum += string(data)
		} else if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			sum += target
		}
		h := sha256.Sum256([]byte(sum))
		out[p] = string(h[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func loadEscapePaths(t *testing.T, f escapeFixture, scopeRoot string) []string {
	t.Helper()
	file, err := os.Open("testdata/escape_paths.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var paths []string
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.NewReplacer("{ROOT}", f.ws, "{BASE}", f.base, "{SCOPE}", scopeRoot).Replace(line)
		paths = append(paths, line)
	}
	if len(paths) < 30 {
		t.Fatalf("corpus too small: %d", len(paths))
	}
	return paths
}

// attack runs every operation of b on p and reports any content it read.
func attack(ctx context.Context, b Backend, p string) (read [][]byte, errs []error) {
	keep := func(data []byte, err error) {
		if err == nil {
			read = append(read, data)
		}
		errs = append(errs, err)
	}
	keep(b.Read(ctx, p))
	if rc, err := b.Open(ctx, p); err == nil {
		data, _ := io.ReadAll(rc)
		rc.Close()
		keep(data, nil)
	}
	if names, err := b.ReadDir(ctx, p); err == nil {
		keep([]byte(strings.Join(names, "\n")), nil)
	}
	_, err := b.Stat(ctx, p)
	errs = append(errs, err)
	_, err = b.Lstat(ctx, p)
	errs = append(errs, err)
	_, err = b.Exists(ctx, p)
	errs = append(errs, err)
	_, err = b.RealPath(ctx, p)
	errs = append(errs, err)
	errs = append(errs, b.Write(ctx, p, []byte("PWNED")))
	if w, err := b.Create(ctx, p); err == nil {
		_, _ = w.Write([]byte("PWNED"))
		errs = append(errs, w.Close())
	}
	errs = append(errs, b.Touch(ctx, p))
	errs = append(errs, b.Mkdir(ctx, p+"/newdir"))
	errs = append(errs, b.Write(ctx, "victim.txt", []byte("v")))
	errs = append(errs, b.Rename(ctx, "victim.txt", p))
	errs = append(errs, b.Rename(ctx, p, "moved-here"))
	errs = append(errs, b.Remove(ctx, p, RemoveOptions{Recursive: true, Force: true}))
	errs = append(errs, b.Remove(ctx, p, RemoveOptions{}))
	return read, errs
}

func TestEscapeCorpus(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		open     func(t *testing.T, f escapeFixture) (Backend, string) // backend, its host dir
		hostRoot func(f escapeFixture) string
	}{
		{"local", func(t *testing.T, f escapeFixture) (Backend, string) {
			l := newTestLocal(t, f.ws)
			return l, f.ws
		}, nil},
		{"local-scope", func(t *testing.T, f escapeFixture) (Backend, string) {
			s, err := newTestLocal(t, f.ws).Scope("users/u1", ScopeOptions{})
			mustOK(t, err)
			return s, filepath.Join(f.ws, "users/u1")
		}, nil},
		{"local-nested-scope", func(t *testing.T, f escapeFixture) (Backend, string) {
			s, err := newTestLocal(t, f.ws).Scope("users", ScopeOptions{})
			mustOK(t, err)
			s2, err := s.Scope("u1", ScopeOptions{})
			mustOK(t, err)
			return s2, filepath.Join(f.ws, "users/u1")
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newEscapeFixture(t)
			b, host := tc.open(t, f)
			before := f.snapshot(t, host)
			paths := loadEscapePaths(t, f, host)
			for _, p := range paths {
				read, errs := attack(ctx, b, p)
				for _, data := range read {
					if bytes.Contains(data, []byte("CANARY")) || bytes.Contains(data, []byte("root:x:0:0")) {
						t.Errorf("%s: read outside content through %q: %q", tc.name, p, data)
					}
				}
				for _, err := range errs {
					if err != nil && !strings.Contains(p, f.base) && strings.Contains(err.Error(), f.base+"/outside") {
						t.Errorf("%s: error for %q reveals a host path: %v", tc.name, p, err)
					}
				}
			}
			after := f.snapshot(t, host)
			for p, sum := range before {
				if after[p] != sum {
					t.Errorf("%s: %s changed", tc.name, p)
				}
			}
			for p := range after {
				if _, ok := before[p]; !ok {
					t.Errorf("%s: %s created outside", tc.name, p)
				}
			}
		})
	}
}

func TestEscapeCorpusMemory(t *testing.T) {
	ctx := context.Background()
	f := escapeFixture{base: "/base", ws: "/base/ws"}
	newMem := func() *Memory {
		m, err := NewMemory(MemoryConfig{RootDir: f.ws, Initial: map[string][]byte{
			"users/u2/secret": []byte("CANARY-SIBLING"), "users/u1/dir/x": []byte("x")}})
		mustOK(t, err)
		return m
	}
	for _, scoped := range []bool{false, true} {
		m := newMem()
		var b Backend = m
		if scoped {
			s, err := m.Scope("users/u1", ScopeOptions{})
			mustOK(t, err)
			b = s
		}
		for _, p := range loadEscapePaths(t, f, b.RootDir()) {
			if _, err := wspathResolveForTest(b.RootDir(), p); err == nil {
				continue // in-root for memory (links do not exist there)
			}
			read, errs := attack(ctx, b, p)
			if len(read) > 0 {
				t.Errorf("memory scoped=%v: %q read %q", scoped, p, read)
			}
			for _, err := range errs {
				if err != nil && !errors.Is(err, ErrPathEscape) {
					t.Errorf("memory scoped=%v: %q: error %v is not a path escape", scoped, p, err)
				}
			}
		}
		if scoped {
			got, err := m.Read(ctx, "users/u2/secret")
			if err != nil || string(got) != "CANARY-SIBLING" {
				t.Fatalf("sibling changed: %q %v", got, err)
			}
		}
	}
}

func newTestLocal(t *testing.T, dir string) *Local {
	t.Helper()
	l, err := NewLocal(LocalConfig{RootDir: dir, Isolation: IsolationSoftware})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Destroy(context.Background()) })
	return l
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
