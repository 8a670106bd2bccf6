package agentbe

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestReadDirEntries(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	l := newTestLocal(t, root)
	mustOK(t, l.Write(ctx, "d/b.txt", []byte("bb")))
	mustOK(t, l.Mkdir(ctx, "d/a_dir"))
	mustOK(t, os.Symlink("a_dir", filepath.Join(root, "d/c_link")))
	m, err := NewMemory(MemoryConfig{Initial: map[string][]byte{"d/b.txt": []byte("bb"), "d/a_dir/x": nil}})
	mustOK(t, err)
	ms, err := m.Scope("d", ScopeOptions{})
	mustOK(t, err)
	ls, err := l.Scope("d", ScopeOptions{})
	mustOK(t, err)

	type want struct {
		name string
		dir  bool
		link bool
	}
	for _, tc := range []struct {
		name string
		read func() ([]fs.DirEntry, error)
		p    string
		want []want
	}{
		{"local", func() ([]fs.DirEntry, error) { return l.readDirEntries(ctx, "d") }, "d",
			[]want{{"a_dir", true, false}, {"b.txt", false, false}, {"c_link", false, true}}},
		{"local scope", func() ([]fs.DirEntry, error) { return ls.readDirEntries(ctx, ".") }, ".",
			[]want{{"a_dir", true, false}, {"b.txt", false, false}, {"c_link", false, true}}},
		{"memory", func() ([]fs.DirEntry, error) { return m.readDirEntries(ctx, "d") }, "d",
			[]want{{"a_dir", true, false}, {"b.txt", false, false}}},
		{"memory scope", func() ([]fs.DirEntry, error) { return ms.readDirEntries(ctx, "/") }, "/",
			[]want{{"a_dir", true, false}, {"b.txt", false, false}}},
	} {
		got, err := tc.read()
		mustOK(t, err)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d entries, want %d", tc.name, len(got), len(tc.want))
		}
		for i, w := range tc.want {
			e := got[i]
			if e.Name() != w.name || e.IsDir() != w.dir || (e.Type()&fs.ModeSymlink != 0) != w.link {
				t.Fatalf("%s: entry %d = %s dir=%v type=%v, want %+v", tc.name, i, e.Name(), e.IsDir(), e.Type(), w)
			}
		}
	}
	if !m.implicitDirs() || !ms.implicitDirs() || ls.implicitDirs() {
		t.Fatal("ImplicitDirs wrong")
	}
}
