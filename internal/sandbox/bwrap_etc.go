package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// etcStage keeps a private copy of etcFiles that the sandbox gets as its
// /etc with a single read-only bind. Binding each file costs one mount per
// spawn (about 0.3 ms each, measured); one directory costs one.
//
// The copy follows the host: at most once per etcRecheck, the sources'
// metadata is compared with the copy's and a new generation is built when
// anything changed (a new resolv.conf, a new user). The last keptEtcGens
// generations are kept for commands still running on them; older ones are
// removed.
type etcStage struct {
	src  string // root the /etc paths are read from: "/" outside tests
	base string // private directory holding the generations

	mu   sync.Mutex
	gen  int
	dir  string   // current generation
	old  []string // previous generations, oldest first
	sig  string
	next time.Time // when to compare the sources again
}

const etcRecheck = time.Second

// keptEtcGens bounds the previous generations kept (each is a few hundred
// KiB); /etc rarely changes, so commands almost never outlive theirs.
const keptEtcGens = 8

// etcStagePrefix names stage directories: agentbe-etc-<pid>-<random>.
const etcStagePrefix = "agentbe-etc-"

// newEtcStage builds the first generation under a new private directory,
// after removing the directories left by processes that no longer run.
func newEtcStage(src string) (*etcStage, error) {
	removeStaleEtcStages()
	base, err := os.MkdirTemp("", etcStagePrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, err
	}
	e := &etcStage{src: src, base: base}
	if _, err := e.current(); err != nil {
		os.RemoveAll(base)
		return nil, err
	}
	return e, nil
}

// current returns the directory to bind at /etc.
func (e *etcStage) current() (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	if e.dir != "" && now.Before(e.next) {
		return e.dir, nil
	}
	e.next = now.Add(etcRecheck)
	sig := e.signature()
	if e.dir != "" && sig == e.sig {
		return e.dir, nil
	}
	e.gen++
	dir := filepath.Join(e.base, strconv.Itoa(e.gen))
	if err := e.build(dir); err != nil {
		os.RemoveAll(dir)
		if e.dir != "" {
			return e.dir, nil // keep serving the last good copy
		}
		return "", err
	}
	if e.dir != "" {
		e.old = append(e.old, e.dir)
	}
	for len(e.old) > keptEtcGens {
		os.RemoveAll(e.old[0])
		e.old = e.old[1:]
	}
	e.dir, e.sig = dir, sig
	return dir, nil
}

// signature summarizes the sources: type, size, mode and modification
// time of each entry and of what a top-level link points to. A directory's
// time changes when entries are added, removed or replaced by rename, which
// is how certificate bundles and alternatives are updated.
func (e *etcStage) signature() string {
	var b strings.Builder
	for _, f := range etcFiles {
		p := filepath.Join(e.src, f)
		for _, stat := range []func(string) (os.FileInfo, error){os.Lstat, os.Stat} {
			if fi, err := stat(p); err == nil {
				fmt.Fprintf(&b, "%s %v %d %d;", f, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
			} else {
				fmt.Fprintf(&b, "%s -;", f)
			}
		}
	}
	return b.String()
}

// build copies the existing etcFiles into dir. A top-level link into a
// system directory (/etc/localtime -> /usr/share/zoneinfo/…) stays a link;
// any other is copied as what it points to, as a bind would show it.
// Inside copied directories links are kept as they are.
func (e *etcStage) build(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range etcFiles {
		src := filepath.Join(e.src, f)
		dst := filepath.Join(dir, strings.TrimPrefix(f, "/etc/"))
		fi, err := os.Lstat(src)
		if err != nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if target, err := os.Readlink(src); err == nil && filepath.IsAbs(target) && underAny(filepath.Clean(target), systemDirs) {
				if err := os.Symlink(target, dst); err != nil {
					return err
				}
				continue
			}
			if fi, err = os.Stat(src); err != nil {
				continue // dangling
			}
		}
		if err := copyEntry(src, dst, fi, 0); err != nil {
			return err
		}
	}
	return nil
}

// copyEntry copies a regular file, a symbolic link (as a link) or a
// directory tree; other file types are skipped.
func copyEntry(src, dst string, fi os.FileInfo, depth int) error {
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case fi.IsDir():
		if depth > 8 {
			return nil
		}
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, ent := range ents {
			cfi, err := ent.Info()
			if err != nil {
				continue
			}
			if err := copyEntry(filepath.Join(src, ent.Name()), filepath.Join(dst, ent.Name()), cfi, depth+1); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode().IsRegular():
		return copyFile(src, dst, fi.Mode().Perm()&0o755)
	}
	return nil
}

func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// removeStaleEtcStages removes stage directories whose process is gone.
func removeStaleEtcStages() {
	tmp := os.TempDir()
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, ent := range ents {
		rest, ok := strings.CutPrefix(ent.Name(), etcStagePrefix)
		if !ok || !ent.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if processGone(pid) {
			os.RemoveAll(filepath.Join(tmp, ent.Name()))
		}
	}
}

// processGone reports whether no process has the given pid.
func processGone(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }
