package grep

import (
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// override is the --glob filter: a gitignore line whose meaning is
// inverted (a plain glob selects, "!glob" excludes), matched against paths
// relative to the root, with precedence over every other rule.
type override struct {
	f          *ignoreFile
	whitelists int
}

func newOverride(g string) (*override, error) {
	gl, ok, msg := parseGitignoreLine(g)
	if msg != "" {
		return nil, &GlobError{Glob: g, msg: msg}
	}
	if !ok {
		return nil, nil
	}
	o := &override{f: &ignoreFile{globs: []*glob{gl}}}
	if !gl.white {
		o.whitelists++
	}
	return o, nil
}

func (o *override) match(p string, isDir bool) matchResult {
	if o == nil {
		return matchNone
	}
	switch o.f.match(p, isDir) {
	case matchIgnore:
		return matchWhitelist
	case matchWhitelist:
		return matchIgnore
	}
	if o.whitelists > 0 && !isDir {
		return matchIgnore
	}
	return matchNone
}

// dirLevel holds the ignore files of one directory.
type dirLevel struct {
	parent            *dirLevel
	rel               string // real path relative to the root
	rg, ig, git, excl *ignoreFile
	hasGit, anyGit    bool
}

// loadLevel reads the ignore files of dir rel; names, when known, lists
// the directory's entries so that absent files are not opened.
func (s *search) loadLevel(parent *dirLevel, rel string, names map[string]fs.FileMode) *dirLevel {
	l := &dirLevel{parent: parent, rel: rel}
	has := func(name string) bool {
		if names == nil {
			_, err := s.root.Stat(path.Join(rel, name))
			return err == nil
		}
		mode, ok := names[name]
		if !ok || mode&fs.ModeIrregular != 0 {
			return false
		}
		if mode&fs.ModeSymlink != 0 { // exists() follows the link (inside the root)
			_, err := s.root.Stat(path.Join(rel, name))
			return err == nil
		}
		return true
	}
	read := func(name string) *ignoreFile {
		if !has(name) {
			return nil
		}
		if data, ok := readSmall(s.root, path.Join(rel, name)); ok {
			return parseIgnoreFile(data)
		}
		return nil
	}
	l.rg = read(".rgignore")
	l.ig = read(".ignore")
	l.hasGit = has(".git")
	l.anyGit = l.hasGit || (parent != nil && parent.anyGit)
	l.git = read(".gitignore")
	if l.hasGit {
		if data, ok := readSmall(s.root, path.Join(rel, ".git/info/exclude")); ok {
			l.excl = parseIgnoreFile(data)
		}
	}
	return l
}

// maxIgnoreFile bounds the ignore files read.
const maxIgnoreFile = 8 << 20

// readSmall reads a regular file of at most maxIgnoreFile bytes through
// the root, without blocking on a FIFO.
func readSmall(root *os.Root, name string) ([]byte, bool) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile))
	return data, err == nil
}

// dirLevels loads the levels from the root down to the parent of rel
// (ripgrep reads the ignore files of the search path's parents; ours stop
// at the root).
func (s *search) dirLevels(rel string) *dirLevel {
	if rel == "." {
		return nil
	}
	var l *dirLevel
	l = s.loadLevel(nil, ".", nil)
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		l = s.loadLevel(l, strings.Join(parts[:i], "/"), nil)
	}
	return l
}

func relTo(dir, p string) string {
	if dir == "." {
		return p
	}
	return strings.TrimPrefix(p, dir+"/")
}

// ignored applies the ignore files: the deepest file of each kind that has
// an opinion decides, .rgignore before .ignore before .gitignore before
// .git/info/exclude before the global gitignore; git files count only
// inside a repository and not above its root.
func (s *search) ignored(l *dirLevel, rel string, isDir bool) matchResult {
	var mRg, mIg, mGit, mEx matchResult
	anyGit := l != nil && l.anyGit
	sawGit := false
	for x := l; x != nil; x = x.parent {
		r := relTo(x.rel, rel)
		if mRg == matchNone {
			mRg = x.rg.match(r, isDir)
		}
		if mIg == matchNone {
			mIg = x.ig.match(r, isDir)
		}
		if anyGit && !sawGit && mGit == matchNone {
			mGit = x.git.match(r, isDir)
		}
		if anyGit && !sawGit && mEx == matchNone {
			mEx = x.excl.match(r, isDir)
		}
		sawGit = sawGit || x.hasGit
	}
	for _, m := range []matchResult{mRg, mIg, mGit, mEx} {
		if m != matchNone {
			return m
		}
	}
	if anyGit {
		return s.global.match(rel, isDir)
	}
	return matchNone
}

// skip decides whether a walked entry is left out: the --glob override
// first, then the ignore files, then --type, then hidden names.
func (s *search) skip(l *dirLevel, rel, name, globPath string, isDir bool) bool {
	switch s.over.match(globPath, isDir) {
	case matchIgnore:
		return true
	case matchWhitelist:
		return false
	}
	white := false
	switch s.ignored(l, rel, isDir) {
	case matchIgnore:
		return true
	case matchWhitelist:
		white = true
	}
	if s.types != nil && !isDir {
		if !s.types.match(name) {
			return true
		}
		white = true
	}
	return !white && strings.HasPrefix(name, ".")
}

func joinDisplay(dir, name string) string {
	if dir == "" {
		return name
	}
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// walk visits directory rel in name order, depth first, emitting the
// files to search; false from emit ends the walk.
func (s *search) walk(parent *dirLevel, rel, display string, emit func(job) bool) bool {
	if s.ctx.Err() != nil {
		return false
	}
	h, err := openDirHandle(s, rel)
	if err != nil {
		return true
	}
	defer h.release()
	ents := h.list()
	slices.SortFunc(ents, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	names := make(map[string]fs.FileMode, 4)
	for _, e := range ents {
		switch e.name {
		case ".rgignore", ".ignore", ".gitignore", ".git":
			names[e.name] = e.mode
		}
	}
	l := s.loadLevel(parent, rel, names)
	absolute := strings.HasPrefix(display, "/")
	for _, e := range ents {
		name := e.name
		if e.mode&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
			continue
		}
		isDir := e.mode.IsDir()
		childRel := name
		if rel != "." {
			childRel = rel + "/" + name
		}
		childDisp := joinDisplay(display, name)
		globPath := strings.TrimPrefix(childDisp, "./")
		if absolute {
			globPath = childRel
		}
		if s.skip(l, childRel, name, globPath, isDir) {
			continue
		}
		if isDir {
			if !s.walk(l, childRel, childDisp, emit) {
				return false
			}
			continue
		}
		if !emit(job{display: childDisp, rel: childRel, walked: true, dir: h, name: name}) {
			return false
		}
	}
	return true
}
