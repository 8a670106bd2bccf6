package sftpjail

import (
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
	"time"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// stat serves STAT (follow) and LSTAT.
func (s *session) stat(id uint32, d *decoder, follow bool) *[]byte {
	name := d.str()
	if !d.ok() {
		return nil
	}
	op := "lstat"
	resolve := s.nofollow
	if follow {
		op, resolve = "stat", s.follow
	}
	rel, err := resolve(name)
	if err != nil {
		return errPacket(id, op, name, err)
	}
	var fi fs.FileInfo
	if follow {
		fi, err = s.root.Stat(rel)
	} else {
		fi, err = s.root.Lstat(rel)
	}
	if err != nil {
		return errPacket(id, op, name, err)
	}
	a := attrsFromFileInfo(fi)
	return attrsPacket(id, &a)
}

// opendir serves OPENDIR; entries are read lazily, a batch per READDIR.
func (s *session) opendir(id uint32, d *decoder) *[]byte {
	name := d.str()
	if !d.ok() {
		return nil
	}
	rel, err := s.follow(name)
	if err != nil {
		return errPacket(id, "opendir", name, err)
	}
	// O_DIRECTORY: anything else fails at once (a FIFO would block).
	f, err := s.root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return errPacket(id, "opendir", name, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		f.Close()
		if err == nil {
			err = errNotDir
		}
		return errPacket(id, "opendir", name, err)
	}
	return s.handleReply(id, "opendir", &handle{f: f, dir: true, name: name, rel: rel})
}

// readdir serves READDIR: up to 100 entries with `ls -l` long names, then
// EOF. Attributes come from an Lstat through the root (not from the host
// path of the directory), and entries that vanished meanwhile are skipped.
// "." and ".." are not listed: at the root ".." would describe a directory
// outside the workspace.
func (s *session) readdir(id uint32, d *decoder) *[]byte {
	hid := d.bytes()
	if !d.ok() {
		return nil
	}
	h := s.handles.get(hid)
	if h == nil || !h.dir {
		return statusPacket(id, statusFailure, errBadHandle.Error())
	}
	now := time.Now()
	for {
		names, err := h.f.Readdirnames(readdirBatch)
		if len(names) == 0 {
			if err == nil || err == io.EOF {
				return statusPacket(id, statusEOF, "EOF")
			}
			return errPacket(id, "readdir", h.name, err)
		}
		entries := make([]nameEntry, 0, len(names))
		for _, n := range names {
			fi, err := s.root.Lstat(wspath.Within(h.rel, n))
			if err != nil {
				continue
			}
			a := attrsFromFileInfo(fi)
			entries = append(entries, nameEntry{name: n, long: longName(n, fi, &a, &s.ids, now), attrs: a})
		}
		if len(entries) > 0 {
			return namePacket(id, entries)
		}
	}
}

// remove serves REMOVE, which deletes files and links, never directories.
func (s *session) remove(id uint32, d *decoder) *[]byte { return s.removeEntry(id, d, "remove", false) }

// rmdir serves RMDIR, which removes an empty directory.
func (s *session) rmdir(id uint32, d *decoder) *[]byte { return s.removeEntry(id, d, "rmdir", true) }

// removeEntry removes the entry named by the request if it is a directory
// exactly when dir is set; the workspace root is never removed.
func (s *session) removeEntry(id uint32, d *decoder, op string, dir bool) *[]byte {
	name := d.str()
	if !d.ok() {
		return nil
	}
	rel, err := s.nofollowEntry(name)
	if err != nil {
		return errPacket(id, op, name, err)
	}
	fi, err := s.root.Lstat(rel)
	switch {
	case err == nil && fi.IsDir() && !dir:
		err = errIsDir
	case err == nil && !fi.IsDir() && dir:
		err = errNotDir
	}
	if err == nil {
		err = s.root.Remove(rel)
	}
	if err != nil {
		return errPacket(id, op, name, err)
	}
	return okPacket(id)
}

// mkdir serves MKDIR; the mode defaults to 0755.
func (s *session) mkdir(id uint32, d *decoder) *[]byte {
	name := d.str()
	a := d.attrs()
	if !d.ok() {
		return nil
	}
	rel, err := s.nofollow(name)
	if err != nil {
		return errPacket(id, "mkdir", name, err)
	}
	mode := fs.FileMode(0o755)
	if a.Flags&attrPermissions != 0 {
		mode = fs.FileMode(a.Mode & 0o777)
	}
	if err := s.root.Mkdir(rel, mode); err != nil {
		return errPacket(id, "mkdir", name, err)
	}
	return okPacket(id)
}

// realpath serves REALPATH: the path with links followed inside the
// workspace, shown as an absolute path from "/" relative to the root. A
// path whose last elements do not exist yet is still resolved.
func (s *session) realpath(id uint32, d *decoder) *[]byte {
	name := d.str()
	if !d.ok() {
		return nil
	}
	rel, err := s.follow(name)
	if err != nil {
		return errPacket(id, "realpath", name, err)
	}
	p := display(rel)
	return namePacket(id, []nameEntry{{name: p, long: p}})
}

// rename serves RENAME (posix false: fails when the destination exists,
// as version 3 and OpenSSH's sftp-server do; the check and the rename are
// two steps) and posix-rename@openssh.com (posix true: replaces it). The
// destination's parent is created; the root can be neither end.
func (s *session) rename(id uint32, d *decoder, posix bool) *[]byte {
	oldName := d.str()
	newName := d.str()
	if !d.ok() {
		return nil
	}
	oldRel, err := s.nofollowEntry(oldName)
	if err != nil {
		return errPacket(id, "rename", oldName, err)
	}
	newRel, err := s.nofollowEntry(newName)
	if err != nil {
		return errPacket(id, "rename", newName, err)
	}
	oldInfo, err := s.root.Lstat(oldRel)
	if err != nil {
		return errPacket(id, "rename", oldName, err)
	}
	if err := s.checkMovedLink(oldRel, newRel); err != nil {
		return errPacket(id, "rename", oldName, err)
	}
	if !posix {
		if _, err := s.root.Lstat(newRel); err == nil {
			return errPacket(id, "rename", newName, errExists)
		}
	}
	if dir := path.Dir(newRel); dir != "." {
		if err := s.root.MkdirAll(dir, 0o755); err != nil {
			return errPacket(id, "rename", newName, err)
		}
	}
	if posix && s.replaceRegular(oldInfo, oldRel, newRel) {
		return okPacket(id)
	}
	if err := s.root.Rename(oldRel, newRel); err != nil {
		return errPacket(id, "rename", oldName, err)
	}
	return okPacket(id)
}

// readlink serves READLINK without ever showing a host path outside the
// workspace (see shownTarget).
func (s *session) readlink(id uint32, d *decoder) *[]byte {
	name := d.str()
	if !d.ok() {
		return nil
	}
	rel, err := s.nofollow(name)
	if err != nil {
		return errPacket(id, "readlink", name, err)
	}
	target, err := s.root.Readlink(rel)
	if err == nil {
		target, err = s.shownTarget(rel, target)
	}
	if err != nil {
		return errPacket(id, "readlink", name, err)
	}
	return namePacket(id, []nameEntry{{name: target, long: target}})
}

// symlink serves SYMLINK. The arguments come in OpenSSH's order (target
// first, then the new link's path), which is the reverse of the draft's;
// every client in use sends them that way.
func (s *session) symlink(id uint32, d *decoder) *[]byte {
	target := d.str()
	linkName := d.str()
	if !d.ok() {
		return nil
	}
	rel, err := s.nofollowEntry(linkName)
	if err != nil {
		return errPacket(id, "symlink", linkName, err)
	}
	stored, err := s.linkTarget(rel, target)
	if err != nil {
		return errPacket(id, "symlink", target, err)
	}
	if err := s.root.Symlink(stored, rel); err != nil {
		return errPacket(id, "symlink", linkName, err)
	}
	return okPacket(id)
}

// extended serves the OpenSSH extensions announced in VERSION.
func (s *session) extended(id uint32, d *decoder) *[]byte {
	name := d.str()
	if !d.ok() {
		return nil
	}
	switch name {
	case extPosixRename:
		return s.rename(id, d, true)
	case extHardlink:
		return s.hardlink(id, d)
	case extFsync:
		hid := d.bytes()
		if !d.ok() {
			return nil
		}
		h := s.handles.get(hid)
		if h == nil || h.dir {
			return statusPacket(id, statusFailure, errBadHandle.Error())
		}
		if err := h.f.Sync(); err != nil {
			return errPacket(id, "fsync", h.name, err)
		}
		return okPacket(id)
	case extLimits:
		bp := getBuf()
		b := startPacket(*bp, fxpExtendedReply)
		b = appendU32(b, id)
		b = appendU64(b, maxPacket-1024)
		b = appendU64(b, maxData)
		b = appendU64(b, maxData)
		b = appendU64(b, uint64(s.handles.max))
		*bp = finishPacket(b)
		return bp
	}
	return statusPacket(id, statusOpUnsupported, "unsupported extension "+name)
}

// hardlink serves hardlink@openssh.com (old path, new path). Both ends are
// resolved without following their last element.
func (s *session) hardlink(id uint32, d *decoder) *[]byte {
	oldName := d.str()
	newName := d.str()
	if !d.ok() {
		return nil
	}
	oldRel, err := s.nofollowEntry(oldName)
	if err != nil {
		return errPacket(id, "link", oldName, err)
	}
	newRel, err := s.nofollowEntry(newName)
	if err != nil {
		return errPacket(id, "link", newName, err)
	}
	if err := s.checkMovedLink(oldRel, newRel); err != nil {
		return errPacket(id, "link", oldName, err)
	}
	if err := s.root.Link(oldRel, newRel); err != nil {
		return errPacket(id, "link", newName, err)
	}
	return okPacket(id)
}
