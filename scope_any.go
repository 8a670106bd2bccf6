package agentbe

import (
	"context"
	"io"
	"io/fs"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// NewScope returns a view of parent restricted to its sub-directory p. It
// works over any Backend: the backends of this package (and their scopes)
// get their own confined view (for Local an *os.Root of the scope
// directory), any other implementation a view that resolves every path
// against the scope root with the workspace conventions ("..", absolute
// paths) before handing the parent a path inside the scope. A third-party
// backend implements its Scope method as
//
//	func (b *MyBackend) Scope(p string, opts agentbe.ScopeOptions) (*agentbe.Scope, error) {
//		return agentbe.NewScope(b, p, opts)
//	}
//
// Over such a backend, links are the parent's business: RealPath's answer is
// checked to lie inside the scope, but what the parent's file operations do
// with a link inside the scope is up to it.
func NewScope(parent Backend, p string, opts ScopeOptions) (*Scope, error) {
	if o, ok := parent.(scopeOwner); ok {
		return newScope(o, p, opts)
	}
	return newScope(&foreignOwner{Backend: parent, scopes: newScopeSet()}, p, opts)
}

// foreignOwner lets a Scope sit on a Backend of another package.
type foreignOwner struct {
	Backend
	scopes *scopeSet
}

func (f *foreignOwner) subtree(rel string) Backend {
	return &prefixView{parent: f.Backend, rel: rel, root: wspath.Join(f.RootDir(), rel)}
}

func (f *foreignOwner) scopeSet() *scopeSet { return f.scopes }

func (f *foreignOwner) ensureDir(ctx context.Context, rel string) error {
	return f.Backend.Mkdir(ctx, rel)
}

// prefixView is the confined view of a foreign backend's sub-directory rel:
// each path is resolved against root (the view's RootDir) and handed to the
// parent as rel joined with the result, so no ".." or absolute path can
// leave the scope.
type prefixView struct {
	parent Backend
	rel    string
	root   string
}

// at maps p to the parent's path.
func (v *prefixView) at(p string) (string, error) {
	r, err := wspath.Resolve(v.root, p)
	if err != nil {
		return "", &Error{Code: CodePathEscape, Op: "resolve", Path: p, Backend: v.parent.Kind(), Err: err}
	}
	return wspath.Within(v.rel, r), nil
}

func (v *prefixView) Kind() Kind      { return v.parent.Kind() }
func (v *prefixView) RootDir() string { return v.root }
func (v *prefixView) Status() Status  { return v.parent.Status() }
func (v *prefixView) OnStatusChange(fn func(old, new Status)) func() {
	return v.parent.OnStatusChange(fn)
}
func (v *prefixView) Track(c io.Closer) func()      { return v.parent.Track(c) }
func (v *prefixView) Destroy(context.Context) error { return nil }
func (v *prefixView) Scope(p string, opts ScopeOptions) (*Scope, error) {
	return NewScope(v, p, opts)
}

func (v *prefixView) subtree(rel string) Backend {
	return &prefixView{parent: v.parent, rel: wspath.Within(v.rel, rel), root: wspath.Join(v.root, rel)}
}

func (v *prefixView) scopeSet() *scopeSet { return newScopeSet() }

func (v *prefixView) ensureDir(ctx context.Context, rel string) error {
	return v.parent.Mkdir(ctx, wspath.Within(v.rel, rel))
}

// call1 runs op on the parent path of p.
func call1[T any](v *prefixView, p string, op func(string) (T, error)) (T, error) {
	q, err := v.at(p)
	if err != nil {
		var zero T
		return zero, err
	}
	return op(q)
}

func (v *prefixView) Read(ctx context.Context, p string) ([]byte, error) {
	return call1(v, p, func(q string) ([]byte, error) { return v.parent.Read(ctx, q) })
}

func (v *prefixView) Write(ctx context.Context, p string, data []byte) error {
	_, err := call1(v, p, func(q string) (struct{}, error) { return struct{}{}, v.parent.Write(ctx, q, data) })
	return err
}

func (v *prefixView) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	return call1(v, p, func(q string) (io.ReadCloser, error) { return v.parent.Open(ctx, q) })
}

func (v *prefixView) Create(ctx context.Context, p string) (io.WriteCloser, error) {
	return call1(v, p, func(q string) (io.WriteCloser, error) { return v.parent.Create(ctx, q) })
}

func (v *prefixView) ReadDir(ctx context.Context, p string) ([]string, error) {
	return call1(v, p, func(q string) ([]string, error) { return v.parent.ReadDir(ctx, q) })
}

func (v *prefixView) Mkdir(ctx context.Context, p string) error {
	_, err := call1(v, p, func(q string) (struct{}, error) { return struct{}{}, v.parent.Mkdir(ctx, q) })
	return err
}

func (v *prefixView) Exists(ctx context.Context, p string) (bool, error) {
	return call1(v, p, func(q string) (bool, error) { return v.parent.Exists(ctx, q) })
}

func (v *prefixView) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	return call1(v, p, func(q string) (fs.FileInfo, error) { return v.parent.Stat(ctx, q) })
}

func (v *prefixView) Lstat(ctx context.Context, p string) (fs.FileInfo, error) {
	return call1(v, p, func(q string) (fs.FileInfo, error) { return v.parent.Lstat(ctx, q) })
}

func (v *prefixView) Remove(ctx context.Context, p string, opts RemoveOptions) error {
	_, err := call1(v, p, func(q string) (struct{}, error) { return struct{}{}, v.parent.Remove(ctx, q, opts) })
	return err
}

func (v *prefixView) Touch(ctx context.Context, p string) error {
	_, err := call1(v, p, func(q string) (struct{}, error) { return struct{}{}, v.parent.Touch(ctx, q) })
	return err
}

func (v *prefixView) Rename(ctx context.Context, oldPath, newPath string) error {
	o, err := v.at(oldPath)
	if err != nil {
		return err
	}
	n, err := v.at(newPath)
	if err != nil {
		return err
	}
	return v.parent.Rename(ctx, o, n)
}

// RealPath asks the parent and refuses an answer outside the scope root.
func (v *prefixView) RealPath(ctx context.Context, p string) (string, error) {
	real, err := call1(v, p, func(q string) (string, error) { return v.parent.RealPath(ctx, q) })
	if err != nil {
		return "", err
	}
	if !inside(real, v.root) {
		return "", &Error{Code: CodePathEscape, Op: "realpath", Path: p, Backend: v.parent.Kind(), Err: ErrPathEscape}
	}
	return real, nil
}

// inside reports whether the absolute path real is root or below it, by
// elements (the parent's answer has no os.Root to be checked against).
func inside(real, root string) bool {
	r, err := wspath.Resolve(root, real)
	return err == nil && wspath.Join(root, r) == real
}

// Exec runs the command in the scope directory (or opts.Dir inside it).
func (v *prefixView) Exec(ctx context.Context, command string, opts ExecOptions) ([]byte, error) {
	dir := opts.Dir
	if dir == "" {
		dir = "."
	}
	q, err := v.at(dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = q
	return v.parent.Exec(ctx, command, opts)
}
