package agentbe

import (
	"context"
	"io/fs"

	"github.com/agentbe/agent-backend/internal/beneath"
)

// ReadDirEntries lists directory p as sorted fs.DirEntry values whose types
// come from lstat (a link is never a directory), in one pass over the
// directory; it spares callers one Lstat per name. It implements
// mcp.DirEntryReader, the optional extension the MCP list tools look for
// (which is why it is exported, outside Backend).
func (l *Local) ReadDirEntries(ctx context.Context, p string) ([]fs.DirEntry, error) {
	done := l.log.begin("readdir", p)
	f, _, r, rel, err := l.openIn(ctx, "readdir", p)
	if err != nil {
		done(err)
		return nil, err
	}
	defer f.Close()
	entries, err := beneath.ReadDir(f, r, rel)
	if err != nil {
		err = l.fail("readdir", p, err)
		done(err)
		return nil, err
	}
	done(nil)
	return entries, nil
}

// ReadDirEntries lists the immediate children of prefix p with synthetic
// information; see ReadDir.
func (m *Memory) ReadDirEntries(ctx context.Context, p string) ([]fs.DirEntry, error) {
	infos, err := m.children(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, len(infos))
	for i, info := range infos {
		out[i] = fs.FileInfoToDirEntry(info)
	}
	return out, nil
}

// ImplicitDirs reports that directories exist only through the keys below
// them, so tools must not require a parent directory to exist. It
// implements mcp.ImplicitDirs, an optional extension of the MCP tools.
func (m *Memory) ImplicitDirs() bool { return true }

// ReadDirEntries lists directory p of the scope; see Local.ReadDirEntries.
func (s *Scope) ReadDirEntries(ctx context.Context, p string) (entries []fs.DirEntry, err error) {
	err = s.run(ctx, "readdir", p, false, func() error {
		if r, ok := s.inner.(interface {
			ReadDirEntries(context.Context, string) ([]fs.DirEntry, error)
		}); ok {
			entries, err = r.ReadDirEntries(ctx, p)
			return err
		}
		return ErrNotImplemented
	})
	return entries, err
}

// ImplicitDirs reports whether the wrapped backend has implicit directories
// (a Memory backend does).
func (s *Scope) ImplicitDirs() bool {
	d, ok := s.inner.(interface{ ImplicitDirs() bool })
	return ok && d.ImplicitDirs()
}
