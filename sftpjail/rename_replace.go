package sftpjail

import (
	"os"
	"path"

	"github.com/agentbe/agent-backend/internal/replace"
)

// replaceRegular serves posix-rename's common case, a regular file renamed
// over another one (how an atomic write commits), with replace.ByExchange
// instead of a rename: on ext4 a rename over a file writes the renamed
// file back inside the call (see that package). It reports false, with
// nothing changed, in any other case; the caller then renames.
func (s *session) replaceRegular(oldRel, newRel string) bool {
	for _, rel := range []string{oldRel, newRel} {
		if fi, err := s.root.Lstat(rel); err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	oldDir, err := s.root.Open(path.Dir(oldRel))
	if err != nil {
		return false
	}
	defer oldDir.Close()
	newDir := oldDir
	if path.Dir(newRel) != path.Dir(oldRel) {
		if newDir, err = s.root.Open(path.Dir(newRel)); err != nil {
			return false
		}
		defer newDir.Close()
	}
	done := false
	withFd(oldDir, func(ofd int) {
		withFd(newDir, func(nfd int) {
			done = replace.ByExchange(ofd, path.Base(oldRel), nfd, path.Base(newRel))
		})
	})
	return done
}

// withFd runs fn with f's descriptor, held open meanwhile.
func withFd(f *os.File, fn func(fd int)) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { fn(int(fd)) })
	}
}
