package fstools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/agentbe/agent-backend/mcp"
)

func (t *fsTools) writeFile(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	p := a.str("path", true)
	content := a.bytes("content", true)
	if err := a.err(); err != nil {
		return errResult(err)
	}
	if abs, ok := t.directPath(p); ok {
		if w, ok := t.ws.(DirectWriter); ok {
			if done, err := w.WriteInDir(ctx, abs, content); done {
				if err != nil {
					return errResult(nodeErr(err, "open", abs, ""))
				}
				return textResult("Successfully wrote to " + p)
			}
		}
	}
	real, err := t.validate(ctx, p)
	if err != nil {
		return errResult(err)
	}
	if err := t.write(ctx, real, content); err != nil {
		return errResult(err)
	}
	return textResult("Successfully wrote to " + p)
}

// DirectWriter is an optional Workspace extension for write_file's common
// case. WriteInDir writes p (an absolute workspace path) only when its
// directory exists and p is a regular file (or absent, if the workspace
// can tell no other name matches it); otherwise it reports false having
// changed nothing, and write_file takes its general path, which checks
// each case as the official server does. data may alias the request's
// arguments: WriteInDir must neither modify it nor keep it after it
// returns. agentbe's Local implements it.
type DirectWriter interface {
	WriteInDir(ctx context.Context, p string, data []byte) (done bool, err error)
}

// write replaces real with content through the workspace's atomic Write,
// after the checks that give the official server's errors: a directory in
// the way, a missing or non-directory parent (the workspace would create
// missing parents; the official server does not).
func (t *fsTools) write(ctx context.Context, real string, content []byte) error {
	fi, err := t.ws.Stat(ctx, real)
	switch {
	case err == nil && fi.IsDir() && modernEra(ctx):
		return &toolError{msg: "Refusing to write: not a regular file: " + real}
	case err == nil && fi.IsDir():
		tmp := real + "." + randomHex() + ".tmp"
		return &nodeError{code: "EISDIR", desc: "illegal operation on a directory", syscall: "rename", path: tmp, dest: real}
	case err != nil:
		if err := t.requireParentDir(ctx, real, "open"); err != nil {
			return err
		}
	}
	if err := t.ws.Write(ctx, real, content); err != nil {
		return nodeErr(err, "open", real, "")
	}
	return nil
}

// requireParentDir fails like Node's syscall would when the parent of real
// is missing or not a directory.
func (t *fsTools) requireParentDir(ctx context.Context, real, syscallName string) error {
	if t.implicitDirs() {
		return nil
	}
	fi, err := t.ws.Stat(ctx, path.Dir(real))
	if err != nil {
		return nodeErr(err, syscallName, real, "")
	}
	if !fi.IsDir() {
		return &nodeError{code: "ENOTDIR", desc: "not a directory", syscall: syscallName, path: real, err: syscall.ENOTDIR}
	}
	return nil
}

// ImplicitDirs is an optional Workspace extension for stores whose
// directories exist implicitly (agentbe's Memory backend: a key "a/b" makes
// "a" a directory and Mkdir does nothing). When ImplicitDirs reports true,
// write_file and move_file skip the official server's "the parent
// directory must exist" checks, which such a store could never pass.
type ImplicitDirs interface {
	ImplicitDirs() bool
}

func (t *fsTools) implicitDirs() bool {
	d, ok := t.ws.(ImplicitDirs)
	return ok && d.ImplicitDirs()
}

func randomHex() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (t *fsTools) createDirectory(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	p, real, err := t.pathArg(ctx, a)
	if err != nil {
		return errResult(err)
	}
	if fi, err := t.ws.Stat(ctx, real); err == nil {
		if !fi.IsDir() {
			shown := real
			if modernEra(ctx) {
				shown = path.Base(real) // as the 2026-era reference names it
			}
			return errResult(&nodeError{code: "EEXIST", desc: "file already exists", syscall: "mkdir", path: shown, err: fs.ErrExist})
		}
		return textResult("Successfully created directory " + p)
	}
	if err := t.ws.Mkdir(ctx, real); err != nil {
		return errResult(nodeErr(err, "mkdir", real, ""))
	}
	return textResult("Successfully created directory " + p)
}

func (t *fsTools) moveFile(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	src := a.str("source", true)
	dst := a.str("destination", true)
	if err := a.err(); err != nil {
		return errResult(err)
	}
	realSrc, err := t.validate(ctx, src)
	if err != nil {
		return errResult(err)
	}
	realDst, err := t.validate(ctx, dst)
	if err != nil {
		return errResult(err)
	}
	if _, err := t.ws.Lstat(ctx, realDst); err == nil {
		return errResult(&toolError{msg: "Destination already exists: " + realDst})
	}
	renameErr := func(err error, en syscall.Errno) error {
		txt := nodeErrnoText[en]
		return &nodeError{code: txt[0], desc: txt[1], syscall: "rename", path: realSrc, dest: realDst, err: err}
	}
	if _, err := t.ws.Lstat(ctx, realSrc); err != nil {
		if en, ok := errnoOf(err); ok && nodeErrnoText[en][0] != "" {
			if modernEra(ctx) {
				// The 2026-era reference names the destination relative
				// to its directory here.
				txt := nodeErrnoText[en]
				return errResult(&nodeError{code: txt[0], desc: txt[1], syscall: "rename", path: realSrc, dest: path.Base(realDst), err: err})
			}
			return errResult(renameErr(err, en))
		}
		return errResult(nodeErr(err, "rename", realSrc, realDst))
	}
	// The workspace may create missing parents; Node's rename does not.
	if fi, err := t.ws.Stat(ctx, path.Dir(realDst)); !t.implicitDirs() && (err != nil || !fi.IsDir()) {
		en := syscall.ENOTDIR
		if err != nil {
			if e, ok := errnoOf(err); ok {
				en = e
			}
		}
		if nodeErrnoText[en][0] == "" {
			en = syscall.ENOENT
		}
		return errResult(renameErr(err, en))
	}
	if realDst == realSrc || strings.HasPrefix(realDst, realSrc+"/") {
		return errResult(renameErr(syscall.EINVAL, syscall.EINVAL))
	}
	if err := t.ws.Rename(ctx, realSrc, realDst); err != nil {
		return errResult(nodeErr(err, "rename", realSrc, realDst))
	}
	return textResult("Successfully moved " + src + " to " + dst)
}
