package replace

import (
	"os"
	"path"
)

// InRoot is ByExchange on two slash-separated names inside root (both
// parents resolved by root, so neither can lead outside it). oldName must
// be a regular file: a directory would be swapped in where rename refuses
// it. It reports false, having changed nothing, when the parents cannot be
// opened or the swap cannot be done.
func InRoot(root *os.Root, oldName, newName string) bool {
	oldDir, err := root.Open(path.Dir(oldName))
	if err != nil {
		return false
	}
	defer oldDir.Close()
	newDir := oldDir
	if path.Dir(newName) != path.Dir(oldName) {
		if newDir, err = root.Open(path.Dir(newName)); err != nil {
			return false
		}
		defer newDir.Close()
	}
	done := false
	withFd(oldDir, func(ofd int) {
		withFd(newDir, func(nfd int) {
			done = ByExchange(ofd, path.Base(oldName), nfd, path.Base(newName))
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
