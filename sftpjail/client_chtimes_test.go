package sftpjail

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestChtimes: the client sets a file's times through SETSTAT, against our
// server and OpenSSH's.
func TestChtimes(t *testing.T) {
	ctx := context.Background()
	for _, server := range []string{"ours", "openssh"} {
		t.Run(server, func(t *testing.T) {
			var c *Client
			dir := tempDir(t)
			if server == "ours" {
				c = newClientFor(t, dir, nil)
			} else {
				c = opensshClient(t, dir)
			}
			if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			mtime := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
			p := "f"
			if server == "openssh" {
				p = filepath.Join(dir, "f")
			}
			if err := c.Chtimes(ctx, p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(filepath.Join(dir, "f"))
			if err != nil {
				t.Fatal(err)
			}
			if !fi.ModTime().Equal(mtime) {
				t.Errorf("mtime %v, want %v", fi.ModTime(), mtime)
			}
			got, err := c.Lstat(ctx, p)
			if err != nil || !got.ModTime().Equal(mtime) {
				t.Errorf("Lstat: %v %v", got, err)
			}
		})
	}
}
