package e2e_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"testing"

	agentbe "github.com/agentbe/agent-backend"
)

// BenchmarkMigrateTenant moves one tenant of 100 files, 64 MiB in all,
// between two daemons on this machine: with Migrate (hash while copying,
// flush, read back and hash, permission bits and times, rename, journal),
// and as a plain SFTP get of every file to local disk then put to the other
// daemon, what an operator would do by hand with sftp.
func BenchmarkMigrateTenant(b *testing.B) {
	ctx := context.Background()
	daemons := []*testDaemon{startDaemon(b, ""), startDaemon(b, "")}
	a, c := daemons[0].addr, daemons[1].addr
	key := ""
	for i := 0; key == ""; i++ {
		if k := fmt.Sprint("t", i); agentbe.ShardFor(k, []string{a, c}) == c {
			key = k
		}
	}
	const files, total = 100, 64 << 20
	src := filepath.Join(daemons[0].root, "tenants", key)
	if err := os.MkdirAll(src, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < files; i++ {
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("f%03d", i)), randomBytes(total/files), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	dst := filepath.Join(daemons[1].root, "tenants", key)
	plan, err := agentbe.PlanMigration([]string{a}, []string{a, c}, []string{key}, "tenants")
	if err != nil {
		b.Fatal(err)
	}
	connect := migrateConnect(b, daemons)

	b.Run("migrate", func(b *testing.B) {
		b.SetBytes(total / files * files)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			os.RemoveAll(dst)
			journal := filepath.Join(b.TempDir(), "j")
			b.StartTimer()
			if _, err := agentbe.Migrate(ctx, plan, agentbe.MigrateOptions{Connect: connect, Journal: journal}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sftp-get-put", func(b *testing.B) {
		b.SetBytes(total / files * files)
		sa := daemons[0].sftp(b)
		sc := daemons[1].sftp(b)
		scope := "tenants/" + key
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			os.RemoveAll(dst)
			local := b.TempDir()
			b.StartTimer()
			list, err := sa.ReadDir(ctx, scope)
			if err != nil {
				b.Fatal(err)
			}
			for _, fi := range list { // get
				in, err := sa.Open(ctx, path.Join(scope, fi.Name()))
				if err != nil {
					b.Fatal(err)
				}
				out, err := os.Create(filepath.Join(local, fi.Name()))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(out, in); err != nil {
					b.Fatal(err)
				}
				in.Close()
				out.Close()
			}
			if err := sc.MkdirAll(ctx, scope, 0o755); err != nil {
				b.Fatal(err)
			}
			for _, fi := range list { // put
				in, err := os.Open(filepath.Join(local, fi.Name()))
				if err != nil {
					b.Fatal(err)
				}
				out, err := sc.Create(ctx, path.Join(scope, fi.Name()))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(out, in); err != nil {
					b.Fatal(err)
				}
				in.Close()
				if err := out.Close(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
