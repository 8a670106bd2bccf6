package fstools

import (
	"context"
	"io"
	"io/fs"
)

// Workspace is what the filesystem tools operate on. Every agentbe backend
// satisfies it; paths follow the agentbe path conventions and errors wrap
// fs.ErrNotExist and friends. The optional extensions (ReadLimiter,
// DirEntryReader, DirectWriter, ImplicitDirs, and Read with ReadLimiter)
// are fast paths behind the same checks.
type Workspace interface {
	// RootDir is the absolute workspace root, the only allowed directory.
	RootDir() string
	Open(ctx context.Context, p string) (io.ReadCloser, error)
	// Write replaces a file atomically, keeping the old file's mode bits and
	// following a symbolic link that stays inside the workspace.
	Write(ctx context.Context, p string, data []byte) error
	Create(ctx context.Context, p string) (io.WriteCloser, error)
	// ReadDir returns the sorted names of a directory's children.
	ReadDir(ctx context.Context, p string) ([]string, error)
	// Mkdir creates a directory and its missing parents.
	Mkdir(ctx context.Context, p string) error
	Stat(ctx context.Context, p string) (fs.FileInfo, error)
	Lstat(ctx context.Context, p string) (fs.FileInfo, error)
	Rename(ctx context.Context, oldPath, newPath string) error
	// RealPath resolves inside links and returns the absolute path under
	// RootDir; a link leading out is an error.
	RealPath(ctx context.Context, p string) (string, error)
}
