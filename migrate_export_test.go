package agentbe

// SetMigrateCopiedHook sets the function Migrate calls once a file's
// content is written to its temporary name, before it is verified; nil
// removes it.
func SetMigrateCopiedHook(fn func(m TenantMove, rel string)) { migrateCopiedHook = fn }

// MigrationTempName is the temporary name a file at p is copied under.
func MigrationTempName(p string) string { return migrationTemp(p) }
