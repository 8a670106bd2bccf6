//go:build !linux

package grep

import (
	"io/fs"
	"os"
	"path"
	"sync/atomic"
	"syscall"
)

// dirHandle names a directory of the walk; files in it are opened through
// the root by their path.
type dirHandle struct {
	s    *search
	rel  string
	refs atomic.Int32
}

func openDirHandle(s *search, rel string) (*dirHandle, error) {
	return &dirHandle{s: s, rel: rel}, nil
}

func (h *dirHandle) acquire() {}
func (h *dirHandle) release() {}

type entry struct {
	name string
	mode os.FileMode
}

func (h *dirHandle) list() []entry {
	d, err := h.s.root.Open(h.rel)
	if err != nil {
		return nil
	}
	defer d.Close()
	ents, _ := d.ReadDir(-1)
	out := make([]entry, 0, len(ents))
	for _, e := range ents {
		m := e.Type() & fs.ModeType
		if m&^(fs.ModeDir|fs.ModeSymlink) != 0 {
			m = os.ModeIrregular
		}
		out = append(out, entry{e.Name(), m})
	}
	return out
}

func (s *search) searchInDir(fsr *fileSearcher, h *dirHandle, name string, walked bool) fileResult {
	f, err := s.root.OpenFile(path.Join(h.rel, name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fileResult{}
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fileResult{}
	}
	return fsr.search(f, walked)
}
