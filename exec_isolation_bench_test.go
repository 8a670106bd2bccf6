package agentbe

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkExecTrue measures Local.Exec("true") per isolation mode. Compare
// with BenchmarkSpawnFloor: bwrap against "bwrap-ref-true" / "bwrap-ref-bash"
// (the reference's argv, order fixed), software against "bash".
func BenchmarkExecTrue(b *testing.B) {
	for _, mode := range []Isolation{IsolationBwrap, IsolationSoftware} {
		b.Run(string(mode), func(b *testing.B) {
			if mode == IsolationBwrap {
				requireBwrap(b)
			}
			l, err := NewLocal(LocalConfig{RootDir: b.TempDir(), Isolation: mode})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Destroy(context.Background())
			ctx := context.Background()
			for b.Loop() {
				if _, err := l.Exec(ctx, "true", ExecOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// bwrapRefArgs are the bwrap options the TypeScript reference spawns a
// command with (workspace root), in its order, ending with "--".
func bwrapRefArgs(root string) []string {
	return []string{"--ro-bind", "/usr", "/usr", "--ro-bind", "/lib", "/lib", "--ro-bind", "/lib64", "/lib64",
		"--ro-bind", "/bin", "/bin", "--ro-bind", "/sbin", "/sbin",
		"--tmpfs", "/tmp", "--bind", root, "/tmp/agentbe-workspace", "--chdir", "/tmp/agentbe-workspace",
		"--unshare-all", "--share-net", "--die-with-parent", "--dev", "/dev", "--proc", "/proc", "--"}
}

// BenchmarkSpawnFloor spawns bare processes with os/exec: the floor an Exec
// is compared with (bench/README.md, the exec rows).
func BenchmarkSpawnFloor(b *testing.B) {
	ref := bwrapRefArgs(b.TempDir())
	cases := []struct {
		name string
		argv []string
		bw   bool
	}{
		{"bash", []string{"bash", "-c", "true"}, false},
		{"bwrap-ref-true", append(append([]string{"bwrap"}, ref...), "/bin/true"), true},
		{"bwrap-ref-bash", append(append([]string{"bwrap"}, ref...), "bash", "-c", "true"), true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if c.bw {
				requireBwrap(b)
			}
			for b.Loop() {
				if err := exec.Command(c.argv[0], c.argv[1:]...).Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
