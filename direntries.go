package agentbe

import (
	"context"
	"io/fs"

	"github.com/agentbe/agent-backend/internal/beneath"
)

// readDirEntries lists directory p as sorted fs.DirEntry values whose types
// come from lstat (a link is never a directory), in one pass over the
// directory; it spares callers one Lstat per name. The MCP list tools use
// it (toolsWorkspace).
func (l *Local) readDirEntries(ctx context.Context, p string) ([]fs.DirEntry, error) {
	done := l.log.begin(ctx, "readdir", p)
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

// readDirEntries lists the immediate children of prefix p with synthetic
// information; see ReadDir.
func (m *Memory) readDirEntries(ctx context.Context, p string) ([]fs.DirEntry, error) {
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

// implicitDirs reports that directories exist only through the keys below
// them, so tools must not require a parent directory to exist.
func (m *Memory) implicitDirs() bool { return true }
