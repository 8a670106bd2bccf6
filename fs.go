package agentbe

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"syscall"
)

// FS returns a read-only io/fs view of b, so a workspace (or a Scope of one)
// plugs into http.FileServer (via http.FS), template.ParseFS, fs.WalkDir,
// fs.Glob and the like. The returned value implements fs.FS, fs.StatFS,
// fs.ReadDirFS and fs.ReadFileFS.
//
// Names follow io/fs rules: they must satisfy fs.ValidPath (unrooted,
// slash-separated, no "." or ".." elements except the root "."), otherwise
// the call fails with an *fs.PathError wrapping fs.ErrInvalid. A valid name
// is handed to b as a path relative to its root, so every access still goes
// through b's resolver and, for Local, its *os.Root.
//
// The io/fs interfaces take no context, so every backend call is made with
// context.Background(); use the Backend methods directly when an operation
// must be cancellable.
//
// Errors are *fs.PathError values whose Err is the backend's error, so
// errors.Is(err, fs.ErrNotExist) and errors.As(err, **Error) both work.
// Opening a directory returns an fs.ReadDirFile. Stat and the entries of a
// directory follow the backend: Stat follows symbolic links, directory
// entries describe links themselves (Lstat), as os.DirFS does. Files whose
// backend stream cannot seek (Memory, remote) still implement io.Seeker, by
// reopening the file and skipping forward when seeking backwards.
func FS(b Backend) fs.FS { return backendFS{b: b} }

// backendFS adapts a Backend to io/fs.
type backendFS struct{ b Backend }

var (
	_ fs.StatFS     = backendFS{}
	_ fs.ReadDirFS  = backendFS{}
	_ fs.ReadFileFS = backendFS{}
)

// check validates name for op.
func check(op, name string) error {
	if !fs.ValidPath(name) {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return nil
}

func fsErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// Open opens name: an fs.ReadDirFile for a directory, a seekable file
// otherwise.
func (f backendFS) Open(name string) (fs.File, error) {
	if err := check("open", name); err != nil {
		return nil, err
	}
	ctx := context.Background()
	fi, err := f.b.Stat(ctx, name)
	if err != nil {
		return nil, fsErr("open", name, err)
	}
	info := namedInfo{FileInfo: fi, name: path.Base(name)}
	if fi.IsDir() {
		return &fsDir{fsys: f, name: name, info: info}, nil
	}
	rc, err := f.b.Open(ctx, name)
	if err != nil {
		return nil, fsErr("open", name, err)
	}
	return &fsFile{fsys: f, name: name, info: info, rc: rc}, nil
}

// Stat describes name, following symbolic links.
func (f backendFS) Stat(name string) (fs.FileInfo, error) {
	if err := check("stat", name); err != nil {
		return nil, err
	}
	fi, err := f.b.Stat(context.Background(), name)
	if err != nil {
		return nil, fsErr("stat", name, err)
	}
	return namedInfo{FileInfo: fi, name: path.Base(name)}, nil
}

// ReadFile returns the content of name.
func (f backendFS) ReadFile(name string) ([]byte, error) {
	if err := check("readfile", name); err != nil {
		return nil, err
	}
	data, err := f.b.Read(context.Background(), name)
	if err != nil {
		return nil, fsErr("readfile", name, err)
	}
	return data, nil
}

// ReadDir lists directory name sorted by file name.
func (f backendFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := check("readdir", name); err != nil {
		return nil, err
	}
	names, err := f.dirNames(name)
	if err != nil {
		return nil, err
	}
	return f.entries(name, names)
}

// dirNames lists directory name after checking that it is one (a Memory
// backend lists a missing prefix as empty; io/fs wants ErrNotExist).
func (f backendFS) dirNames(name string) ([]string, error) {
	ctx := context.Background()
	fi, err := f.b.Stat(ctx, name)
	if err != nil {
		return nil, fsErr("readdir", name, err)
	}
	if !fi.IsDir() {
		return nil, fsErr("readdir", name, syscall.ENOTDIR)
	}
	names, err := f.b.ReadDir(ctx, name)
	if err != nil {
		return nil, fsErr("readdir", name, err)
	}
	return names, nil
}

// entries describes the children names of dir with Lstat. An entry removed
// between the listing and the Lstat is skipped, as os.ReadDir does.
func (f backendFS) entries(dir string, names []string) ([]fs.DirEntry, error) {
	ctx := context.Background()
	out := make([]fs.DirEntry, 0, len(names))
	for _, n := range names {
		child := n
		if dir != "." {
			child = dir + "/" + n
		}
		fi, err := f.b.Lstat(ctx, child)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, fsErr("readdir", dir, err)
		}
		out = append(out, fs.FileInfoToDirEntry(namedInfo{FileInfo: fi, name: n}))
	}
	return out, nil
}

// namedInfo fixes the name a backend reports (which may be "." or a base of
// a host path) to the one io/fs expects.
type namedInfo struct {
	fs.FileInfo
	name string
}

func (i namedInfo) Name() string { return i.name }

// fsFile is an open regular file.
type fsFile struct {
	fsys   backendFS
	name   string
	info   fs.FileInfo
	rc     io.ReadCloser
	off    int64 // read position, tracked for non-seekable streams
	closed bool
}

func (f *fsFile) Stat() (fs.FileInfo, error) {
	if f.closed {
		return nil, fsErr("stat", f.name, fs.ErrClosed)
	}
	return f.info, nil
}

func (f *fsFile) Read(p []byte) (int, error) {
	if f.closed {
		return 0, fsErr("read", f.name, fs.ErrClosed)
	}
	n, err := f.rc.Read(p)
	f.off += int64(n)
	return n, err
}

// Seek uses the stream's own Seek when it has one; otherwise it reopens the
// file to go backwards and discards bytes to go forwards. Offsets relative to
// the end use the size reported when the file was opened.
func (f *fsFile) Seek(offset int64, whence int) (int64, error) {
	if f.closed {
		return 0, fsErr("seek", f.name, fs.ErrClosed)
	}
	if s, ok := f.rc.(io.Seeker); ok {
		return s.Seek(offset, whence)
	}
	var target int64
	switch whence {
	case io.SeekStart:
		target = offset
	case io.SeekCurrent:
		target = f.off + offset
	case io.SeekEnd:
		target = f.info.Size() + offset
	default:
		return 0, fsErr("seek", f.name, fs.ErrInvalid)
	}
	if target < 0 {
		return 0, fsErr("seek", f.name, fs.ErrInvalid)
	}
	if target < f.off {
		rc, err := f.fsys.b.Open(context.Background(), f.name)
		if err != nil {
			return 0, fsErr("seek", f.name, err)
		}
		_ = f.rc.Close()
		f.rc, f.off = rc, 0
	}
	if target > f.off {
		n, err := io.CopyN(io.Discard, f.rc, target-f.off)
		f.off += n
		if err != nil && err != io.EOF {
			return f.off, fsErr("seek", f.name, err)
		}
		// Seeking past the end is allowed; later reads return io.EOF.
		if f.off < target {
			f.off = target
		}
	}
	return target, nil
}

func (f *fsFile) Close() error {
	if f.closed {
		return fsErr("close", f.name, fs.ErrClosed)
	}
	f.closed = true
	return f.rc.Close()
}

// fsDir is an open directory. Its entries are listed on the first ReadDir
// call and described (Lstat) batch by batch.
type fsDir struct {
	fsys   backendFS
	name   string
	info   fs.FileInfo
	names  []string
	listed bool
	closed bool
}

func (d *fsDir) Stat() (fs.FileInfo, error) {
	if d.closed {
		return nil, fsErr("stat", d.name, fs.ErrClosed)
	}
	return d.info, nil
}

func (d *fsDir) Read([]byte) (int, error) {
	return 0, fsErr("read", d.name, syscall.EISDIR)
}

func (d *fsDir) Close() error {
	if d.closed {
		return fsErr("close", d.name, fs.ErrClosed)
	}
	d.closed = true
	return nil
}

// ReadDir implements fs.ReadDirFile: with n > 0 it returns at most n entries
// and io.EOF once none are left; with n <= 0 it returns all remaining ones.
func (d *fsDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if d.closed {
		return nil, fsErr("readdir", d.name, fs.ErrClosed)
	}
	if !d.listed {
		names, err := d.fsys.b.ReadDir(context.Background(), d.name)
		if err != nil {
			return nil, fsErr("readdir", d.name, err)
		}
		d.names, d.listed = names, true
	}
	var out []fs.DirEntry
	for len(d.names) > 0 && (n <= 0 || len(out) < n) {
		k := len(d.names)
		if n > 0 && n-len(out) < k {
			k = n - len(out)
		}
		batch := d.names[:k]
		d.names = d.names[k:]
		ents, err := d.fsys.entries(d.name, batch)
		out = append(out, ents...)
		if err != nil {
			return out, err
		}
	}
	if n > 0 && len(out) == 0 {
		return nil, io.EOF
	}
	if out == nil {
		out = []fs.DirEntry{}
	}
	return out, nil
}

var (
	_ fs.ReadDirFile = (*fsDir)(nil)
	_ io.Seeker      = (*fsFile)(nil)
)
