package sftpjail

import (
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"testing"
)

const benchSize = 64 << 20

// benchServers connects our client to each server: ours in-process over
// OS pipes, ours as the `agent-backend sftp-server` process, and OpenSSH's
// sftp-server process.
var benchServers = []struct {
	name  string
	start func(b *testing.B, dir string) io.ReadWriteCloser
}{
	{"ours-inprocess", func(b *testing.B, dir string) io.ReadWriteCloser {
		rw, wait := startServer(b, dir, nil)
		b.Cleanup(func() { wait() })
		return rw
	}},
	{"ours-process", func(b *testing.B, dir string) io.ReadWriteCloser {
		return startProcess(b, b.TempDir(), agentBackendBin(b), "sftp-server", "--rootDir", dir)
	}},
	{"openssh", func(b *testing.B, dir string) io.ReadWriteCloser {
		return startProcess(b, dir, needTool(b, opensshServer))
	}},
}

// benchChunks are the client's default (32 KiB, as OpenSSH's classic
// default) and the largest the servers accept (what OpenSSH's sftp uses
// once the server announces limits@openssh.com).
var benchChunks = []struct {
	name string
	size int
}{{"chunk32k", 32 << 10}, {"chunk255k", maxData}}

// forEachSetup runs fn for every server and chunk size with a connected
// client.
func forEachSetup(b *testing.B, prepare func(b *testing.B, dir string), fn func(b *testing.B, c *Client)) {
	for _, srv := range benchServers {
		for _, ch := range benchChunks {
			b.Run(srv.name+"/"+ch.name, func(b *testing.B) {
				dir := tempDir(b)
				prepare(b, dir)
				c, err := NewClientContext(ctxT(b), srv.start(b, dir), &ClientOptions{ChunkSize: ch.size})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				fn(b, c)
			})
		}
	}
}

// BenchmarkClientGet downloads a 64 MiB file with io.Copy (pipelined
// WriteTo) into io.Discard.
func BenchmarkClientGet(b *testing.B) {
	data := make([]byte, benchSize)
	rand.Read(data)
	prepare := func(b *testing.B, dir string) {
		if err := os.WriteFile(filepath.Join(dir, "src.bin"), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	forEachSetup(b, prepare, func(b *testing.B, c *Client) {
		ctx := ctxT(b)
		b.SetBytes(benchSize)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			f, err := c.Open(ctx, "src.bin")
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, f); err != nil || n != benchSize {
				b.Fatal(n, err)
			}
			f.Close()
		}
	})
}

// BenchmarkClientPut uploads 64 MiB with io.Copy (pipelined ReadFrom).
func BenchmarkClientPut(b *testing.B) {
	src := filepath.Join(b.TempDir(), "src.bin")
	data := make([]byte, benchSize)
	rand.Read(data)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		b.Fatal(err)
	}
	forEachSetup(b, func(*testing.B, string) {}, func(b *testing.B, c *Client) {
		ctx := ctxT(b)
		b.SetBytes(benchSize)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			in, err := os.Open(src)
			if err != nil {
				b.Fatal(err)
			}
			f, err := c.Create(ctx, "up.bin")
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(f, in); err != nil || n != benchSize {
				b.Fatal(n, err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			in.Close()
		}
	})
}
