package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	agentbe "github.com/agentbe/agent-backend"
)

// BenchmarkRemoteSideBySide times the same operations, in one run, through
// our Remote, through the TypeScript reference client (agent-backend@0.13.2,
// interop/bench/remote-client.mjs; its own timing, without node's start)
// against the same daemon (ours, in this process, isolation none), and
// through a Local backend on the same disk as the ceiling:
//
//	go test -run '^$' -bench RemoteSideBySide -benchtime 200x .
//
// The 64 MiB rows report MB/s as well. Nothing is asserted: the figures go
// in the closing note.
func BenchmarkRemoteSideBySide(b *testing.B) {
	ctx := context.Background()
	d := startDaemon(b, "bench-token")
	r := d.remote(b, func(c *agentbe.RemoteConfig) { c.KeepaliveInterval = -1 })
	local, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: d.root, Isolation: agentbe.IsolationNone})
	must(b, err)
	defer local.Destroy(ctx)
	small := bytes.Repeat([]byte{7}, 4096)
	big := bytes.Repeat([]byte{9}, 64<<20)
	must(b, r.Write(ctx, "bench/fixed.bin", small))
	must(b, r.Write(ctx, "bench/big-fixed.bin", big))

	type op struct {
		name  string
		bytes int64
		run   func(agentbe.Backend, int) error
	}
	ops := []op{
		{"write4k", 4096, func(be agentbe.Backend, i int) error { return be.Write(ctx, "bench/go-"+strconv.Itoa(i%64), small) }},
		{"read4k", 4096, func(be agentbe.Backend, _ int) error { _, err := be.Read(ctx, "bench/fixed.bin"); return err }},
		{"write64m", 64 << 20, func(be agentbe.Backend, _ int) error { return be.Write(ctx, "bench/go-big.bin", big) }},
		{"read64m", 64 << 20, func(be agentbe.Backend, _ int) error { _, err := be.Read(ctx, "bench/big-fixed.bin"); return err }},
		{"exec", 0, func(be agentbe.Backend, _ int) error {
			_, err := be.Exec(ctx, "true", agentbe.ExecOptions{})
			return err
		}},
	}
	node, nodeErr := exec.LookPath("node")
	wd, _ := os.Getwd()
	script := filepath.Join(wd, "../../interop/bench/remote-client.mjs")
	host, port := d.hostPort()
	for _, o := range ops {
		for _, side := range []struct {
			name string
			be   agentbe.Backend
		}{{"remote", r}, {"local", local}} {
			b.Run(o.name+"/"+side.name, func(b *testing.B) {
				if o.bytes > 0 {
					b.SetBytes(o.bytes)
				}
				must(b, o.run(side.be, 0))
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					if err := o.run(side.be, i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(o.name+"/ts-client", func(b *testing.B) {
			if nodeErr != nil {
				b.Skip("node not installed")
			}
			n := b.N
			if o.bytes >= 64<<20 && n > 20 {
				n = 20
			}
			cmd := exec.Command(node, script, host, strconv.Itoa(port), d.token, d.root, o.name, strconv.Itoa(n))
			cmd.Dir = filepath.Join(wd, "../../interop")
			out, err := cmd.Output()
			if err != nil {
				b.Skipf("reference client: %v\n%s", err, out)
			}
			var res struct{ NsPerOp, BytesPerOp float64 }
			if err := json.Unmarshal(bytes.TrimSpace(out), &res); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			b.ReportMetric(res.NsPerOp, "ns/op")
			if res.BytesPerOp > 0 {
				b.ReportMetric(res.BytesPerOp/res.NsPerOp*1e3, "MB/s")
			}
		})
	}
}
