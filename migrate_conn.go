package agentbe

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/agentbe/agent-backend/sftpjail"
)

// shardConns are the connections of a migration, one Remote per shard,
// made on first use and destroyed by close.
type shardConns struct {
	connect ConnectFunc
	mu      sync.Mutex
	remotes map[string]*Remote
}

func newShardConns(connect ConnectFunc) *shardConns {
	return &shardConns{connect: connect, remotes: map[string]*Remote{}}
}

// shardConn is a shard's SFTP session and where the Remote's RootDir lies
// in the daemon's workspace.
type shardConn struct {
	shard string
	sftp  *sftpjail.Client
	base  string // RootDir relative to the workspace root, "" for the root
}

// get returns the shard's live SFTP session, connecting (again, after a
// loss) when needed.
func (s *shardConns) get(ctx context.Context, shard string) (*shardConn, error) {
	s.mu.Lock()
	r := s.remotes[shard]
	s.mu.Unlock()
	if r == nil {
		nr, err := s.connect(ctx, shard)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", shard, err)
		}
		if nr == nil {
			return nil, fmt.Errorf("shard %s: the ConnectFunc returned no Remote", shard)
		}
		s.mu.Lock()
		if r = s.remotes[shard]; r == nil {
			r, s.remotes[shard] = nr, nr
			nr = nil
		}
		s.mu.Unlock()
		if nr != nil { // another goroutine connected first
			nr.Destroy(ctx)
		}
	}
	if r.view {
		return nil, fmt.Errorf("shard %s: the ConnectFunc returned a scope's view, not a Remote", shard)
	}
	l, err := r.core.ensure(ctx, "migrate")
	if err != nil {
		return nil, fmt.Errorf("shard %s: %w", shard, err)
	}
	// Our daemon presents its workspace (or static scope) as "/" and a
	// directory under it as "/dir". Paths go out relative to that root:
	// an absolute path could be taken for a host path under the daemon's
	// own root directory.
	return &shardConn{shard: shard, sftp: l.sftp, base: strings.Trim(l.presentedRoot, "/")}, nil
}

// close destroys every Remote.
func (s *shardConns) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.remotes {
		r.Destroy(context.Background())
	}
	s.remotes = map[string]*Remote{}
}

// path is the SFTP path of rel (relative to the Remote's root).
func (c *shardConn) path(rel string) string {
	switch {
	case rel == "" || rel == ".":
		if c.base == "" {
			return "."
		}
		return c.base
	case c.base == "":
		return rel
	}
	return c.base + "/" + rel
}

// errNotDirChain reports a scope path that goes through a link or a file.
var errNotDirChain = errors.New("is a symbolic link or a file, not a directory")

// checkDirChain checks that every element of rel (a clean relative path,
// "" for the root) is a directory, not a link, on c; a missing one is
// fs.ErrNotExist, or is created (0755) when create is set.
func checkDirChain(ctx context.Context, c *shardConn, rel string, create bool) error {
	if rel == "" || rel == "." {
		return nil
	}
	elems := strings.Split(rel, "/")
	for i := range elems {
		sub := strings.Join(elems[:i+1], "/")
		fi, err := c.sftp.Lstat(ctx, c.path(sub))
		if errors.Is(err, fs.ErrNotExist) && create {
			// Another tenant's migration may make it at the same time:
			// whoever made it, it must be a directory now.
			merr := c.sftp.Mkdir(ctx, c.path(sub), 0o755)
			if fi, err = c.sftp.Lstat(ctx, c.path(sub)); err != nil && merr != nil {
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
