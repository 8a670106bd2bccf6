package fstools

import (
	"context"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"syscall"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// windowsPath matches what the official server rejects on POSIX hosts.
var windowsPath = regexp.MustCompile(`^[A-Za-z]:([\\/]|$)`)

// fsTools binds the filesystem tools to one workspace.
type fsTools struct {
	ws   Workspace
	root string // ws.RootDir(), cleaned
	lim  resultLimits
}

func newFSTools(ws Workspace, lim Limits) *fsTools {
	root := ws.RootDir()
	if root == "" {
		root = "/"
	}
	return &fsTools{ws: ws, root: path.Clean(root), lim: lim.effective()}
}

// denied is the official server's wording for a path outside the allowed
// directory. shown is the path as given (made absolute lexically), never a
// resolved host path.
func (t *fsTools) denied(shown string, err error) error {
	return &toolError{msg: "Access denied - path outside allowed directories: " + shown + " not in " + t.root, err: err}
}

// lexicalAbs is what the official server shows for a path it rejects:
// path.resolve against the root.
func (t *fsTools) lexicalAbs(p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return path.Clean(t.root + "/" + p)
}

// pathArg reads the required "path" argument, checks the arguments decoded
// so far, and validates the path: it returns the path as given and the real
// path the tool works on.
func (t *fsTools) pathArg(ctx context.Context, a *args) (given, real string, err error) {
	given = a.str("path", true)
	if err := a.err(); err != nil {
		return "", "", err
	}
	real, err = t.validate(ctx, given)
	return given, real, err
}

// validate maps a path argument onto the absolute, symlink-resolved
// workspace path the tool works on, the way the official server's
// validatePath does, within the agentbe rules:
//
//   - "~" and "~/x" name the workspace root (the decision: the workspace is
//     the agent's home, and the host's $HOME is never consulted);
//   - Windows drive paths are rejected with the official text;
//   - the conventions of wspath.Resolve apply (relative and foreign
//     absolute paths resolve under the root, a ".." that leaves it is
//     denied);
//   - symbolic links are followed by the workspace, never out of it;
//   - a path that does not exist is walked component by component so that
//     an NFC request finds an NFD name (several candidates are ambiguous),
//     a missing tail is kept as given, and a dangling link is refused.
//
// The workspace itself (an *os.Root for Local) is what guarantees nothing
// escapes; validate only reproduces the official answers.
func (t *fsTools) validate(ctx context.Context, p string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = t.root + p[1:]
	}
	if windowsPath.MatchString(p) {
		return "", &toolError{msg: "Access denied - Windows-style path received on a POSIX host: " + p}
	}
	rel, err := wspath.Resolve(t.root, p)
	if err != nil {
		return "", t.denied(t.lexicalAbs(p), err)
	}
	abs := wspath.Join(t.root, rel)
	real, err := t.ws.RealPath(ctx, abs)
	if err != nil {
		return "", t.realpathErr(err, abs)
	}
	if _, err := t.ws.Lstat(ctx, real); err == nil || !isErrno(err, syscall.ENOENT) {
		return real, nil
	}
	return t.walk(ctx, rel, abs)
}

// realpathErr words a RealPath failure: errno failures as Node's realpath
// does, anything else (a link that leads out) as a denial.
func (t *fsTools) realpathErr(err error, abs string) error {
	if en, ok := errnoOf(err); ok && en != syscall.ENOENT {
		return nodeErr(err, "realpath", abs, "")
	}
	return &toolError{msg: "Access denied - symlink target outside allowed directories: " + abs + " not in " + t.root, err: err}
}

// walk resolves rel component by component from the root. It is only used
// for paths that do not exist, so its extra lookups cost nothing on the
// common path.
func (t *fsTools) walk(ctx context.Context, rel, abs string) (string, error) {
	segs := strings.Split(rel, "/")
	cur := t.root
	for i := 0; i < len(segs); i++ {
		seg := segs[i]
		cand := joinRest(cur, segs[i:i+1])
		fi, err := t.ws.Lstat(ctx, cand)
		if err == nil {
			if fi.Mode()&fs.ModeSymlink == 0 {
				cur = cand
				continue
			}
			target, err := t.ws.RealPath(ctx, cand)
			if err != nil {
				return "", t.realpathErr(err, abs)
			}
			if _, err := t.ws.Lstat(ctx, target); err != nil {
				return "", &toolError{msg: "Parent directory does not exist: " + path.Dir(abs), err: err}
			}
			cur = target
			continue
		}
		if !isErrno(err, syscall.ENOENT) {
			return joinRest(cur, segs[i:]), nil
		}
		match, err := t.unicodeMatch(ctx, cur, seg)
		if err != nil {
			return "", err
		}
		if match == "" {
			return joinRest(cur, segs[i:]), nil
		}
		segs[i] = match
		i-- // look the matched name up like any other
	}
	return cur, nil
}

// unicodeMatch finds the single entry of dir whose name is canonically
// equivalent to name (but not equal to it); "" when there is none.
func (t *fsTools) unicodeMatch(ctx context.Context, dir, name string) (string, error) {
	if wspath.IsASCII(name) {
		return "", nil
	}
	names, err := t.ws.ReadDir(ctx, dir)
	if err != nil {
		return "", nil
	}
	found := ""
	for _, n := range names {
		if n != name && canonicallyEqual(n, name) {
			if found != "" {
				return "", &toolError{msg: "Ambiguous Unicode path component: " + name}
			}
			found = n
		}
	}
	return found, nil
}

func joinRest(cur string, rest []string) string {
	if cur == "/" {
		return "/" + strings.Join(rest, "/")
	}
	return cur + "/" + strings.Join(rest, "/")
}
