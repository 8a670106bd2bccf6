package sftpjail

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"sort"
)

func pathErr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: p, Err: err}
}

// pathReq sends a request whose only field is a path.
func (c *Client) pathReq(ctx context.Context, typ byte, p string) (reply, error) {
	return c.roundTrip(ctx, func(b []byte) []byte { return appendString(b, p) }, typ)
}

// statusReq sends a request answered by a STATUS and returns its error.
func (c *Client) statusReq(ctx context.Context, op, p string, typ byte, build func([]byte) []byte) error {
	r, err := c.roundTrip(ctx, build, typ)
	if err != nil {
		return pathErr(op, p, err)
	}
	defer r.release()
	if r.typ != fxpStatus {
		return pathErr(op, p, expect(&r, fxpStatus))
	}
	return pathErr(op, p, statusOf(&r))
}

func (c *Client) attrsReq(ctx context.Context, op string, typ byte, p string) (fs.FileInfo, error) {
	r, err := c.pathReq(ctx, typ, p)
	if err != nil {
		return nil, pathErr(op, p, err)
	}
	defer r.release()
	if err := expect(&r, fxpAttrs); err != nil {
		return nil, pathErr(op, p, err)
	}
	d := decoder{b: r.body}
	a := d.attrs()
	if !d.ok() {
		return nil, pathErr(op, p, ErrBadPacket)
	}
	return &fileInfo{name: path.Base(p), attrs: a}, nil
}

// Stat returns the attributes of p, following symbolic links.
func (c *Client) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	return c.attrsReq(ctx, "stat", fxpStat, p)
}

// Lstat returns the attributes of p without following a final link.
func (c *Client) Lstat(ctx context.Context, p string) (fs.FileInfo, error) {
	return c.attrsReq(ctx, "lstat", fxpLstat, p)
}

// names decodes a NAME reply.
func names(r *reply) ([]nameEntry, error) {
	if err := expect(r, fxpName); err != nil {
		return nil, err
	}
	d := decoder{b: r.body}
	n := d.u32()
	if uint64(n)*12 > uint64(len(d.b)) { // each entry takes at least 12 bytes
		return nil, ErrBadPacket
	}
	out := make([]nameEntry, 0, n)
	for i := uint32(0); i < n; i++ {
		e := nameEntry{name: d.str(), long: d.str(), attrs: d.attrs()}
		if !d.ok() {
			return nil, ErrBadPacket
		}
		out = append(out, e)
	}
	return out, nil
}

// ReadDir lists directory p, sorted by name, without "." and "..".
func (c *Client) ReadDir(ctx context.Context, p string) ([]fs.FileInfo, error) {
	r, err := c.pathReq(ctx, fxpOpendir, p)
	if err != nil {
		return nil, pathErr("readdir", p, err)
	}
	h, err := handleOf(&r)
	r.release()
	if err != nil {
		return nil, pathErr("readdir", p, err)
	}
	defer c.closeHandle(h)
	var out []fs.FileInfo
	for {
		r, err := c.roundTrip(ctx, func(b []byte) []byte { return appendString(b, h) }, fxpReaddir)
		if err != nil {
			return nil, pathErr("readdir", p, err)
		}
		entries, err := names(&r)
		r.release()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, pathErr("readdir", p, err)
		}
		for _, e := range entries {
			if e.name == "." || e.name == ".." {
				continue
			}
			out = append(out, &fileInfo{name: e.name, attrs: e.attrs})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// handleOf decodes a HANDLE reply.
func handleOf(r *reply) (string, error) {
	if err := expect(r, fxpHandle); err != nil {
		return "", err
	}
	d := decoder{b: r.body}
	h := d.str()
	if !d.ok() {
		return "", ErrBadPacket
	}
	return h, nil
}

// closeHandle closes a handle, without waiting for a context.
func (c *Client) closeHandle(h string) error {
	return c.statusReq(context.Background(), "close", h, fxpClose, func(b []byte) []byte { return appendString(b, h) })
}

// Mkdir creates directory p with mode perm (before the server's umask).
func (c *Client) Mkdir(ctx context.Context, p string, perm fs.FileMode) error {
	return c.statusReq(ctx, "mkdir", p, fxpMkdir, func(b []byte) []byte {
		b = appendString(b, p)
		return appendAttrs(b, &Attrs{Flags: attrPermissions, Mode: uint32(perm.Perm())})
	})
}

// MkdirAll creates p and any missing parents, like os.MkdirAll.
func (c *Client) MkdirAll(ctx context.Context, p string, perm fs.FileMode) error {
	if fi, err := c.Stat(ctx, p); err == nil {
		if fi.IsDir() {
			return nil
		}
		return pathErr("mkdir", p, errNotDir)
	}
	if parent := path.Dir(p); parent != p && parent != "." && parent != "/" {
		if err := c.MkdirAll(ctx, parent, perm); err != nil {
			return err
		}
	}
	err := c.Mkdir(ctx, p, perm)
	if err != nil {
		if fi, serr := c.Stat(ctx, p); serr == nil && fi.IsDir() {
			return nil // created meanwhile
		}
	}
	return err
}

// Remove removes a file, link or empty directory, like os.Remove.
func (c *Client) Remove(ctx context.Context, p string) error {
	err := c.statusReq(ctx, "remove", p, fxpRemove, func(b []byte) []byte { return appendString(b, p) })
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if fi, serr := c.Lstat(ctx, p); serr == nil && fi.IsDir() {
		return c.RemoveDir(ctx, p)
	}
	return err
}

// RemoveDir removes an empty directory (RMDIR).
func (c *Client) RemoveDir(ctx context.Context, p string) error {
	return c.statusReq(ctx, "rmdir", p, fxpRmdir, func(b []byte) []byte { return appendString(b, p) })
}

// RemoveAll removes p and everything under it, like os.RemoveAll: a
// missing p is not an error, and links are removed, never followed.
func (c *Client) RemoveAll(ctx context.Context, p string) error {
	fi, err := c.Lstat(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return c.statusReq(ctx, "remove", p, fxpRemove, func(b []byte) []byte { return appendString(b, p) })
	}
	entries, err := c.ReadDir(ctx, p)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := c.RemoveAll(ctx, path.Join(p, e.Name())); err != nil {
			return err
		}
	}
	return c.RemoveDir(ctx, p)
}

// Rename renames oldp to newp. When the server supports
// posix-rename@openssh.com an existing newp is replaced, as os.Rename
// does; otherwise the version 3 RENAME is used, which fails if newp exists.
func (c *Client) Rename(ctx context.Context, oldp, newp string) error {
	if c.HasExtension(extPosixRename) {
		return c.statusReq(ctx, "rename", oldp, fxpExtended, func(b []byte) []byte {
			b = appendString(b, extPosixRename)
			b = appendString(b, oldp)
			return appendString(b, newp)
		})
	}
	return c.statusReq(ctx, "rename", oldp, fxpRename, func(b []byte) []byte {
		b = appendString(b, oldp)
		return appendString(b, newp)
	})
}

// Chmod sets the permission bits of p.
func (c *Client) Chmod(ctx context.Context, p string, mode fs.FileMode) error {
	return c.statusReq(ctx, "chmod", p, fxpSetstat, func(b []byte) []byte {
		b = appendString(b, p)
		return appendAttrs(b, &Attrs{Flags: attrPermissions, Mode: modeToPosix(mode) & 0o7777})
	})
}

// Symlink creates link newp pointing to target. The arguments go on the
// wire in OpenSSH's order (target first).
func (c *Client) Symlink(ctx context.Context, target, newp string) error {
	return c.statusReq(ctx, "symlink", newp, fxpSymlink, func(b []byte) []byte {
		b = appendString(b, target)
		return appendString(b, newp)
	})
}

// ReadLink returns the target of link p.
func (c *Client) ReadLink(ctx context.Context, p string) (string, error) {
	return c.singleName(ctx, "readlink", fxpReadlink, p)
}

// RealPath returns the server's canonical absolute form of p.
func (c *Client) RealPath(ctx context.Context, p string) (string, error) {
	return c.singleName(ctx, "realpath", fxpRealpath, p)
}

func (c *Client) singleName(ctx context.Context, op string, typ byte, p string) (string, error) {
	r, err := c.pathReq(ctx, typ, p)
	if err != nil {
		return "", pathErr(op, p, err)
	}
	defer r.release()
	entries, err := names(&r)
	if err == nil && len(entries) != 1 {
		err = ErrBadPacket
	}
	if err != nil {
		return "", pathErr(op, p, err)
	}
	return entries[0].name, nil
}
