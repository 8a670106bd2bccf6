package agentbe

import (
	"context"

	"github.com/agentbe/agent-backend/internal/migrate"
	"github.com/agentbe/agent-backend/sftpjail"
)

// SetMigrateCopiedHook sets the function Migrate calls once a file's
// content is written to its temporary name, before it is verified; nil
// removes it.
func SetMigrateCopiedHook(fn func(m TenantMove, rel string)) {
	if fn == nil {
		migrate.CopiedHook = nil
		return
	}
	migrate.CopiedHook = func(m migrate.Move, rel string) { fn(TenantMove(m), rel) }
}

// MigrationTempName is the temporary name a file at p is copied under.
func MigrationTempName(p string) string { return migrate.TempName(p) }

// RemoteSFTP returns r's SFTP session, connecting first.
func RemoteSFTP(ctx context.Context, r *Remote) (*sftpjail.Client, error) {
	l, err := r.core.ensure(ctx, "test")
	if err != nil {
		return nil, err
	}
	return l.sftp, nil
}
