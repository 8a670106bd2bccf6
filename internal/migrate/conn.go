package migrate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/agentbe/agent-backend/sftpjail"
)

// Conn is a shard's SFTP session and where the Remote's RootDir lies
// in the daemon's workspace.
type Conn struct {
	Shard string
	SFTP  *sftpjail.Client
	Base  string // the Remote's RootDir relative to the workspace root, "" for the root
}

// Path is the SFTP path of rel (relative to the Remote's root).
func (c *Conn) Path(rel string) string {
	switch {
	case rel == "" || rel == ".":
		if c.Base == "" {
			return "."
		}
		return c.Base
	case c.Base == "":
		return rel
	}
	return c.Base + "/" + rel
}

// errNotDirChain reports a scope path that goes through a link or a file.
var errNotDirChain = errors.New("is a symbolic link or a file, not a directory")

// CheckDirChain checks that every element of rel (a clean relative path,
// "" for the root) is a directory, not a link, on c; a missing one is
// fs.ErrNotExist, or is created (0755) when create is set.
func CheckDirChain(ctx context.Context, c *Conn, rel string, create bool) error {
	if rel == "" || rel == "." {
		return nil
	}
	elems := strings.Split(rel, "/")
	for i := range elems {
		sub := strings.Join(elems[:i+1], "/")
		fi, err := c.SFTP.Lstat(ctx, c.Path(sub))
		if errors.Is(err, fs.ErrNotExist) && create {
			// Another tenant's migration may make it at the same time:
			// whoever made it, it must be a directory now.
			merr := c.SFTP.Mkdir(ctx, c.Path(sub), 0o755)
			if fi, err = c.SFTP.Lstat(ctx, c.Path(sub)); err != nil && merr != nil {
				err = merr
			}
		}
		if err != nil {
			return fmt.Errorf("%q: %w", sub, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%q %w", sub, errNotDirChain)
		}
	}
	return nil
}
