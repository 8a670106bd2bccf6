package sftpjail

import (
	"context"
	"time"
)

// Chtimes sets the access and modification times of p (whole seconds, as
// SFTP version 3 carries them; a link is followed). Our server, like
// OpenSSH's, may ignore a change it cannot make.
func (c *Client) Chtimes(ctx context.Context, p string, atime, mtime time.Time) error {
	return c.statusReq(ctx, "chtimes", p, fxpSetstat, func(b []byte) []byte {
		b = appendString(b, p)
		return appendAttrs(b, &Attrs{Flags: attrACModTime, Atime: uint32(atime.Unix()), Mtime: uint32(mtime.Unix())})
	})
}
