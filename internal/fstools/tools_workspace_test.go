package fstools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// rootWorkspace is a test-only Workspace on an *os.Root, resolving paths
// with wspath the way the agentbe backends do.
type rootWorkspace struct {
	dir string
	r   *os.Root
}

func newRootWorkspace(dir string) (*rootWorkspace, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &rootWorkspace{dir: dir, r: r}, nil
}

func (w *rootWorkspace) RootDir() string { return w.dir }

// real resolves p to a clean relative path with inside links followed.
func (w *rootWorkspace) real(p string) (string, error) {
	rel, err := wspath.Resolve(w.dir, p)
	if err != nil {
		return "", err
	}
	return wspath.RealPath(w.r, w.dir, rel)
}

func (w *rootWorkspace) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	rel, err := w.real(p)
	if err != nil {
		return nil, err
	}
	return w.r.Open(rel)
}

func (w *rootWorkspace) Write(ctx context.Context, p string, data []byte) error {
	rel, err := w.real(p)
	if err != nil {
		return err
	}
	mode := fs.FileMode(0o644)
	if fi, err := w.r.Stat(rel); err == nil {
		if fi.IsDir() {
			return &fs.PathError{Op: "write", Path: p, Err: errors.New("is a directory")}
		}
		mode = fi.Mode().Perm()
	}
	var b [8]byte
	rand.Read(b[:])
	tmp := rel + ".tmp" + hex.EncodeToString(b[:])
	f, err := w.r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.r.Chmod(tmp, mode&^umask())
	}
	if err == nil {
		err = w.r.Rename(tmp, rel)
	}
	if err != nil {
		w.r.Remove(tmp)
	}
	return err
}

func umask() fs.FileMode { return 0o022 }

func (w *rootWorkspace) Create(ctx context.Context, p string) (io.WriteCloser, error) {
	rel, err := w.real(p)
	if err != nil {
		return nil, err
	}
	return w.r.Create(rel)
}

func (w *rootWorkspace) ReadDir(ctx context.Context, p string) ([]string, error) {
	rel, err := w.real(p)
	if err != nil {
		return nil, err
	}
	f, err := w.r.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

func (w *rootWorkspace) Mkdir(ctx context.Context, p string) error {
	rel, err := w.real(p)
	if err != nil {
		return err
	}
	return w.r.MkdirAll(rel, 0o755)
}

func (w *rootWorkspace) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	rel, err := w.real(p)
	if err != nil {
		return nil, err
	}
	return w.r.Stat(rel)
}

func (w *rootWorkspace) Lstat(ctx context.Context, p string) (fs.FileInfo, error) {
	rel, err := wspath.Resolve(w.dir, p)
	if err != nil {
		return nil, err
	}
	if dir := path.Dir(rel); dir != "." {
		rdir, err := wspath.RealPath(w.r, w.dir, dir)
		if err != nil {
			return nil, err
		}
		rel = wspath.Within(rdir, path.Base(rel))
	}
	return w.r.Lstat(rel)
}

func (w *rootWorkspace) Rename(ctx context.Context, oldPath, newPath string) error {
	a, err := w.real(oldPath)
	if err != nil {
		return err
	}
	b, err := w.real(newPath)
	if err != nil {
		return err
	}
	return w.r.Rename(a, b)
}

func (w *rootWorkspace) RealPath(ctx context.Context, p string) (string, error) {
	rel, err := w.real(p)
	if err != nil {
		return "", err
	}
	return wspath.Join(w.dir, rel), nil
}

// ReadDirEntries implements DirEntryReader: one readdir, types from d_type.
func (w *rootWorkspace) ReadDirEntries(ctx context.Context, p string) ([]fs.DirEntry, error) {
	rel, err := w.real(p)
	if err != nil {
		return nil, err
	}
	f, err := w.r.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return ents, nil
}

// namesOnly hides ReadDirEntries, to test the per-entry Lstat path.
type namesOnly struct{ Workspace }
