package sftpjail

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runSFTPBatch runs OpenSSH's sftp client in batch mode against the server
// command given to -D and returns its output.
func runSFTPBatch(t *testing.T, workdir, server, batch string) (string, error) {
	t.Helper()
	sftp := needTool(t, "sftp")
	bf := filepath.Join(t.TempDir(), "batch")
	if err := os.WriteFile(bf, []byte(batch), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sftp, "-b", bf, "-D", server)
	cmd.Dir = workdir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// interopBatch exercises put/get/ls/mkdir/rmdir/rename/rm/chmod/symlink/ln.
const interopBatch = `mkdir dir1
put {L}/src.bin dir1/up.bin
get dir1/up.bin {L}/down.bin
ls -l dir1
rename dir1/up.bin dir1/renamed.bin
chmod 600 dir1/renamed.bin
symlink dir1/renamed.bin link.bin
get link.bin {L}/vialink.bin
ln dir1/renamed.bin hard.bin
mkdir gone
rmdir gone
put {L}/src.bin tmp.bin
rm tmp.bin
mkdir dir2
put {L}/small.txt dir2/small.txt
get dir2/small.txt {L}/small-back.txt
ls -l
`

func prepareLocal(t *testing.T) (string, []byte) {
	local := tempDir(t)
	src := make([]byte, 3<<20+12345)
	rand.Read(src)
	if err := os.WriteFile(filepath.Join(local, "src.bin"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(local, "small.txt"), "small file\n")
	return local, src
}

// treeOf describes a workspace: every entry's type, permission bits,
// contents (files) or target (links).
func treeOf(t *testing.T, root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, _ := os.Lstat(p)
		line := rel + " " + fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			line += " " + strconv.Itoa(len(b))
		}
		out = append(out, line)
		return nil
	})
	sort.Strings(out)
	return out
}

// TestOpenSSHClientAgainstOurServer drives `sftp -D "agent-backend
// sftp-server --rootDir X"` and compares the result with the same batch
// against OpenSSH's own sftp-server.
func TestOpenSSHClientAgainstOurServer(t *testing.T) {
	needTool(t, "sftp")
	bin := agentBackendBin(t)
	local, src := prepareLocal(t)
	batch := strings.ReplaceAll(interopBatch, "{L}", local)

	ours := tempDir(t)
	out, err := runSFTPBatch(t, t.TempDir(), bin+" sftp-server --rootDir "+ours, batch)
	if err != nil {
		t.Fatalf("sftp against our server: %v\n%s", err, out)
	}
	for _, name := range []string{"down.bin", "vialink.bin"} {
		if got, _ := os.ReadFile(filepath.Join(local, name)); !bytes.Equal(got, src) {
			t.Fatalf("%s differs from the source (%d bytes)", name, len(got))
		}
	}
	if readFile(t, filepath.Join(local, "small-back.txt")) != "small file\n" {
		t.Fatal("small file round trip")
	}
	fi, err := os.Stat(filepath.Join(ours, "dir1/renamed.bin"))
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != int64(len(src)) {
		t.Fatalf("renamed file: %v %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(ours, "link.bin")); err != nil || target != "dir1/renamed.bin" {
		t.Fatalf("symlink target %q %v", target, err)
	}
	for _, want := range []string{"-rw-------", "renamed.bin", "drwxr-xr-x", "dir2"} {
		if !strings.Contains(out, want) {
			t.Errorf("ls output lacks %q:\n%s", want, out)
		}
	}

	// Absolute paths from "/" name workspace paths.
	out, err = runSFTPBatch(t, t.TempDir(), bin+" sftp-server --rootDir "+ours,
		"cd /dir1\npwd\nls -l /dir1\nget /dir1/renamed.bin "+local+"/abs.bin\ncd ..\npwd\n")
	if err != nil {
		t.Fatalf("absolute paths: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Remote working directory: /dir1") || !strings.Contains(out, "Remote working directory: /\n") {
		t.Errorf("cd/pwd output:\n%s", out)
	}
	if got, _ := os.ReadFile(filepath.Join(local, "abs.bin")); !bytes.Equal(got, src) {
		t.Fatal("get by absolute path differs")
	}

	// The same batch against OpenSSH's sftp-server (run in its workspace)
	// must leave the same tree.
	needTool(t, opensshServer)
	theirs := tempDir(t)
	for _, n := range []string{"down.bin", "vialink.bin", "small-back.txt"} {
		os.Remove(filepath.Join(local, n))
	}
	out2, err := runSFTPBatch(t, theirs, opensshServer, batch)
	if err != nil {
		t.Fatalf("sftp against OpenSSH's server: %v\n%s", err, out2)
	}
	// OpenSSH's server keeps relative link targets as given, like ours;
	// absolute ones (from the client's cwd "/") differ by design.
	a, b := treeOf(t, ours), treeOf(t, theirs)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatalf("trees differ:\nours:\n%s\nOpenSSH:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}

// TestOurClientAgainstOpenSSHServer runs our client's operations against
// /usr/lib/openssh/sftp-server and checks the results on the host.
func TestOurClientAgainstOpenSSHServer(t *testing.T) {
	dir := tempDir(t)
	c := opensshClient(t, dir)
	testClientOps(t, c, dir)
}

// TestOurClientAgainstOurServerProcess runs the same operations against
// `agent-backend sftp-server` as a process.
func TestOurClientAgainstOurServerProcess(t *testing.T) {
	bin := agentBackendBin(t)
	dir := tempDir(t)
	c, err := NewClient(startProcess(t, t.TempDir(), bin, "sftp-server", "--rootDir", dir))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testClientOps(t, c, dir)
}

func testClientOps(t *testing.T, c *Client, dir string) {
	ctx := ctxT(t)
	data := make([]byte, 5<<20+777)
	rand.Read(data)

	if err := c.MkdirAll(ctx, "a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := c.Create(ctx, "a/b/c/data.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a/b/c/data.bin")); !bytes.Equal(got, data) {
		t.Fatal("uploaded file differs")
	}
	// WriteAt with a large buffer, then ReadAt in pieces.
	f, err = c.OpenFile(ctx, "a/wa.bin", os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	part := make([]byte, 1<<20)
	if _, err := f.ReadAt(part, 12345); err != nil || !bytes.Equal(part, data[12345:12345+len(part)]) {
		t.Fatalf("ReadAt: %v", err)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != int64(len(data)) {
		t.Fatalf("fstat: %v %v", fi, err)
	}
	f.Close()

	r, err := c.Open(ctx, "a/b/c/data.bin")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := io.Copy(&got, r); err != nil || !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("download: %v, %d bytes", err, got.Len())
	}
	r.Close()

	fi, err := c.Stat(ctx, "a/b/c/data.bin")
	if err != nil || fi.Size() != int64(len(data)) || !fi.Mode().IsRegular() {
		t.Fatalf("Stat: %v %v", fi, err)
	}
	if err := c.Chmod(ctx, "a/b/c/data.bin", 0o600); err != nil {
		t.Fatal(err)
	}
	if hfi, _ := os.Stat(filepath.Join(dir, "a/b/c/data.bin")); hfi.Mode().Perm() != 0o600 {
		t.Fatalf("chmod: %v", hfi.Mode())
	}
	if err := c.Symlink(ctx, "b/c/data.bin", "a/link"); err != nil {
		t.Fatal(err)
	}
	if target, err := c.ReadLink(ctx, "a/link"); err != nil || target != "b/c/data.bin" {
		t.Fatalf("ReadLink %q %v", target, err)
	}
	if fi, err := c.Lstat(ctx, "a/link"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("Lstat link: %v %v", fi, err)
	}
	if fi, err := c.Stat(ctx, "a/link"); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("Stat link: %v %v", fi, err)
	}
	if err := c.Rename(ctx, "a/b/c/data.bin", "a/moved.bin"); err != nil {
		t.Fatal(err)
	}
	entries, err := c.ReadDir(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "b,link,moved.bin,wa.bin" {
		t.Fatalf("ReadDir a = %v", names)
	}
	if _, err := c.Stat(ctx, "nothing/here"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	if err := c.Remove(ctx, "a/wa.bin"); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveAll(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Fatalf("RemoveAll: %v", err)
	}
}

// rawListing returns name -> long name from READDIR.
func rawListing(t *testing.T, c *Client, dir string) map[string]string {
	ctx := ctxT(t)
	r, err := c.pathReq(ctx, fxpOpendir, dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := handleOf(&r)
	if err != nil {
		t.Fatal(err)
	}
	defer c.closeHandle(h)
	out := map[string]string{}
	for {
		r, err := c.roundTrip(ctx, func(b []byte) []byte { return appendString(b, h) }, fxpReaddir)
		if err != nil {
			t.Fatal(err)
		}
		es, err := names(&r)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			out[e.name] = e.long
		}
	}
}

// TestLongNamesMatchOpenSSH: READDIR long names are formatted exactly as
// OpenSSH's sftp-server formats them.
func TestLongNamesMatchOpenSSH(t *testing.T) {
	dir := tempDir(t)
	writeFile(t, filepath.Join(dir, "list/file.txt"), "12345")
	writeFile(t, filepath.Join(dir, "list/sub/x"), "")
	os.Chmod(filepath.Join(dir, "list/file.txt"), 0o4751)
	os.Symlink("file.txt", filepath.Join(dir, "list/link"))
	old := time.Date(2019, 3, 4, 5, 6, 7, 0, time.Local)
	os.Chtimes(filepath.Join(dir, "list/sub"), old, old)
	theirs := rawListing(t, opensshClient(t, dir), "list")
	ours := rawListing(t, newClientFor(t, dir, nil), "list")
	for name, long := range theirs {
		if name == "." || name == ".." {
			continue
		}
		if ours[name] != long {
			t.Errorf("%s:\n ours    %q\n OpenSSH %q", name, ours[name], long)
		}
	}
	if len(ours) != 3 {
		t.Errorf("ours lists %d entries: %v", len(ours), ours)
	}
}
