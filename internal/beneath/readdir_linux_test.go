package beneath

import (
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestReadDirMatchesOSReadDir: names, types and lstat information agree
// with os.ReadDir for every kind of entry, and the directory-reading loop
// copes with more entries than one getdents buffer holds.
func TestReadDirMatchesOSReadDir(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, os.WriteFile(filepath.Join(dir, "file"), []byte("12345"), 0o644))
	mustOK(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	mustOK(t, os.Symlink("file", filepath.Join(dir, "link")))
	mustOK(t, os.Symlink("/nowhere", filepath.Join(dir, "dangling")))
	mustOK(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	mustOK(t, err)
	defer ln.Close()
	for i := 0; i < 400; i++ {
		mustOK(t, os.WriteFile(filepath.Join(dir, "many-"+strings.Repeat("x", i%50)+string(rune('a'+i%26))+"-"+strconv.Itoa(i)), nil, 0o644))
	}
	want, err := os.ReadDir(dir)
	mustOK(t, err)

	r, err := os.OpenRoot(dir)
	mustOK(t, err)
	defer r.Close()
	f, err := r.Open(".")
	mustOK(t, err)
	defer f.Close()
	got, err := ReadDir(f, r, ".")
	mustOK(t, err)
	sort.Slice(got, func(i, j int) bool { return got[i].Name() < got[j].Name() })
	if len(got) != len(want) {
		t.Fatalf("%d entries, os.ReadDir has %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name() != w.Name() || g.Type() != w.Type() || g.IsDir() != w.IsDir() {
			t.Fatalf("entry %d: %s %v, os.ReadDir has %s %v", i, g.Name(), g.Type(), w.Name(), w.Type())
		}
		gi, err1 := g.Info()
		wi, err2 := w.Info()
		if err1 != nil || err2 != nil || gi.Size() != wi.Size() || gi.Mode() != wi.Mode() || !gi.ModTime().Equal(wi.ModTime()) {
			t.Fatalf("%s: Info %v %v, os.ReadDir %v %v", g.Name(), gi, err1, wi, err2)
		}
	}
}

// dirent64 encodes one linux_dirent64 record.
func dirent64(ino uint64, typ uint8, name string) []byte {
	reclen := (direntName + len(name) + 1 + 7) &^ 7
	b := make([]byte, reclen)
	binary.NativeEndian.PutUint64(b[direntIno:], ino)
	binary.NativeEndian.PutUint16(b[direntReclen:], uint16(reclen))
	b[direntType] = typ
	copy(b[direntName:], name)
	return b
}

// TestAppendDirents: records of unknown type are lstat-ed through the
// root, deleted (inode 0) records and the dot entries are skipped, and a
// corrupt record length is an error, not a panic or a loop.
func TestAppendDirents(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	mustOK(t, os.Mkdir(filepath.Join(dir, "d", "inner"), 0o755))
	r, err := os.OpenRoot(dir)
	mustOK(t, err)
	defer r.Close()
	var buf []byte
	for _, rec := range [][]byte{
		dirent64(1, syscall.DT_DIR, "."), dirent64(1, syscall.DT_DIR, ".."),
		dirent64(0, syscall.DT_REG, "deleted"),
		dirent64(5, syscall.DT_UNKNOWN, "inner"),    // lstat says directory
		dirent64(6, syscall.DT_UNKNOWN, "vanished"), // lstat fails: skipped
		dirent64(7, syscall.DT_LNK, "l"),
	} {
		buf = append(buf, rec...)
	}
	got, err := appendDirents(nil, buf, r, "d")
	mustOK(t, err)
	var names []string
	for _, e := range got {
		names = append(names, e.Name()+":"+e.Type().String())
	}
	if strings.Join(names, " ") != "inner:d--------- l:L---------" {
		t.Fatalf("entries: %v", names)
	}
	bad := dirent64(9, syscall.DT_REG, "x")
	binary.NativeEndian.PutUint16(bad[direntReclen:], 3)
	if _, err := appendDirents(nil, bad, r, "d"); err == nil {
		t.Fatal("corrupt record length accepted")
	}
}

// FuzzAppendDirents: any buffer decodes without panicking, and never
// yields a dot entry.
func FuzzAppendDirents(f *testing.F) {
	f.Add(append(dirent64(1, syscall.DT_REG, "a"), dirent64(2, syscall.DT_UNKNOWN, "b")...))
	f.Add(dirent64(1, syscall.DT_DIR, ".."))
	f.Add([]byte{1, 2, 3})
	r, err := os.OpenRoot(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	defer r.Close()
	f.Fuzz(func(t *testing.T, buf []byte) {
		got, _ := appendDirents(nil, buf, r, ".")
		for _, e := range got {
			if e.Name() == "." || e.Name() == ".." {
				t.Fatalf("dot entry %q", e.Name())
			}
			if strings.ContainsRune(e.Name(), 0) {
				t.Fatalf("name %q keeps its NUL", e.Name())
			}
		}
	})
}
