package sftpjail

import (
	"io/fs"

	"github.com/agentbe/agent-backend/internal/replace"
)

// replaceRegular serves posix-rename's common case, a regular file (old,
// as the caller's Lstat found it) renamed over another one (how an atomic
// write commits), with replace.InRoot instead of a rename: on ext4 a
// rename over a file writes the renamed file back inside the call (see
// that package). The swap itself declines a missing destination, and
// undoes itself over a directory. It reports false, with nothing changed,
// in any other case; the caller then renames.
func (s *session) replaceRegular(old fs.FileInfo, oldRel, newRel string) bool {
	return old.Mode().IsRegular() && replace.InRoot(s.root, oldRel, newRel)
}
