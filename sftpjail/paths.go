package sftpjail

import (
	"errors"
	"io/fs"
	"path"
	"strings"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// follow resolves a client path to a link-free path relative to the root,
// following symbolic links in every element (STAT, OPEN, OPENDIR,
// SETSTAT, REALPATH). Links are followed with wspath.RealPath, so an
// absolute target under the root's host path works; the os.Root operation
// that follows still enforces the jail on its own.
func (s *session) follow(p string) (string, error) {
	if p == "" {
		p = "."
	}
	rel, err := wspath.Resolve(s.hostRoot, p)
	if err != nil {
		return "", err
	}
	return wspath.RealPath(s.root, s.hostRoot, rel)
}

// nofollowEntry is nofollow for requests that remove, move or link an
// entry: the workspace root itself is refused.
func (s *session) nofollowEntry(p string) (string, error) {
	rel, err := s.nofollow(p)
	if err == nil && rel == "." {
		err = errRootBusy
	}
	return rel, err
}

// nofollow resolves a client path whose last element must not be followed
// (LSTAT, REMOVE, RMDIR, MKDIR, RENAME, READLINK, SYMLINK): links in the
// parent are followed, the final name is kept.
func (s *session) nofollow(p string) (string, error) {
	if p == "" {
		return "", errEmptyPath
	}
	rel, err := wspath.Resolve(s.hostRoot, p)
	if err != nil || rel == "." {
		return rel, err
	}
	dir, base := path.Split(rel)
	if dir == "" {
		return base, nil
	}
	parent, err := wspath.RealPath(s.root, s.hostRoot, strings.TrimSuffix(dir, "/"))
	if err != nil {
		return "", err
	}
	return wspath.Within(parent, base), nil
}

// display presents a path relative to the root as the client sees it: an
// absolute path from "/".
func display(rel string) string {
	if rel == "." || rel == "" {
		return "/"
	}
	return "/" + rel
}

// linkTarget turns the target a client asked a new link at linkRel to point
// to into the text stored in the link. An absolute target is taken as a
// workspace path (the three path cases) and stored relative to the link's
// directory, so the link means the same inside the jail and on the host; a
// relative target is kept as given. Either way the stored target must
// resolve inside the workspace, lexically and through the links that exist
// now (see checkLinkTarget).
func (s *session) linkTarget(linkRel, target string) (string, error) {
	if target == "" {
		return "", errEmptyPath
	}
	stored := target
	if path.IsAbs(target) {
		tRel, err := wspath.Resolve(s.hostRoot, target)
		if err != nil {
			return "", err
		}
		stored = relativeTo(path.Dir(linkRel), tRel)
	}
	if err := s.checkLinkTarget(linkRel, stored); err != nil {
		return "", err
	}
	return stored, nil
}

// checkLinkTarget reports whether a link at linkRel whose stored target is
// target would lead outside the workspace, lexically or by following the
// links that exist now: such a link is never followed out by this server
// (os.Root and wspath refuse), but a host process walking the workspace
// would follow it. SYMLINK, RENAME and hardlink@openssh.com refuse to
// create or move a link to where it escapes. (Links inside a renamed
// directory are not re-examined.)
func (s *session) checkLinkTarget(linkRel, target string) error {
	if path.IsAbs(target) {
		if !s.underRoot(target) {
			return wspath.ErrEscape
		}
		rel, err := wspath.Resolve(s.hostRoot, target)
		if err != nil {
			return err
		}
		target, linkRel = rel, "x" // now relative to the root
	}
	joined := wspath.Within(path.Dir(linkRel), target)
	if _, err := wspath.Resolve(s.hostRoot, joined); err != nil {
		return err
	}
	if _, err := wspath.RealPath(s.root, s.hostRoot, joined); errors.Is(err, wspath.ErrEscape) {
		return err
	}
	return nil
}

// checkMovedLink refuses to move or link the symbolic link at oldRel to
// newRel when its target would lead outside from there.
func (s *session) checkMovedLink(oldRel, newRel string) error {
	fi, err := s.root.Lstat(oldRel)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil // not a link; the operation reports other errors
	}
	target, err := s.root.Readlink(oldRel)
	if err != nil {
		return err
	}
	return s.checkLinkTarget(newRel, target)
}

// relativeTo returns the relative path from directory dir to target, both
// clean paths relative to the root.
func relativeTo(dir, target string) string {
	split := func(p string) []string {
		if p == "." {
			return nil
		}
		return strings.Split(p, "/")
	}
	d, t := split(dir), split(target)
	i := 0
	for i < len(d) && i < len(t) && d[i] == t[i] {
		i++
	}
	parts := make([]string, 0, len(d)-i+len(t)-i)
	for range d[i:] {
		parts = append(parts, "..")
	}
	parts = append(parts, t[i:]...)
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}

// shownTarget is what READLINK reports for the link at linkRel whose
// stored target is target: an absolute target under the root's host path
// as a workspace path from "/", a relative target that stays inside as it
// is. Anything else would name a host path outside, so it is refused.
func (s *session) shownTarget(linkRel, target string) (string, error) {
	if path.IsAbs(target) {
		rel, err := wspath.Resolve(s.hostRoot, target)
		if err != nil || !s.underRoot(target) {
			return "", errLinkOutside
		}
		return display(rel), nil
	}
	if _, err := wspath.Resolve(s.hostRoot, wspath.Within(path.Dir(linkRel), target)); err != nil {
		return "", errLinkOutside
	}
	return target, nil
}

// underRoot reports whether absolute p, cleaned, names the root's host
// path or something under it (element-wise comparison).
func (s *session) underRoot(p string) bool {
	if s.hostRoot == "/" {
		return true
	}
	rs := strings.Split(strings.Trim(s.hostRoot, "/"), "/")
	ps := strings.Split(strings.Trim(path.Clean(p), "/"), "/")
	if len(ps) < len(rs) {
		return false
	}
	for i := range rs {
		if ps[i] != rs[i] {
			return false
		}
	}
	return true
}
