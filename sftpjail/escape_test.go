package sftpjail

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

const (
	canaryText = "CANARY-must-never-be-read-or-changed"
	secretName = "secret-listing-name.txt" // no request ever names it
)

// escapeFixture builds base/ws (the workspace) and base/outside (the
// canary), with symbolic links in the workspace that point in and out.
func escapeFixture(t *testing.T) (base, ws, out string) {
	base = tempDir(t)
	ws = filepath.Join(base, "ws")
	out = filepath.Join(base, "outside")
	writeFile(t, filepath.Join(out, "canary.txt"), canaryText)
	writeFile(t, filepath.Join(out, secretName), canaryText)
	os.Chmod(filepath.Join(out, "canary.txt"), 0o640)
	old := time.Unix(1_600_000_000, 0)
	os.Chtimes(filepath.Join(out, "canary.txt"), old, old)
	writeFile(t, filepath.Join(ws, "sub/deep/file.txt"), "inside")
	writeFile(t, filepath.Join(ws, "plain.txt"), "plain")
	links := map[string]string{
		"link_out_abs":      out,
		"link_out_rel":      "../outside",
		"link_out_file":     "../outside/canary.txt",
		"link_dir_out":      "../outside",
		"chain1":            "chain2",
		"chain2":            "../outside",
		"sub/deep/up":       "../../..",
		"sub/link_parent":   "../..",
		"link_root":         "/",
		"link_etc":          "/etc",
		"dangling_out":      "../outside/created-through-link.txt",
		"dangling_out_abs":  filepath.Join(out, "created-abs.txt"),
		"link_in":           "sub",
		"link_in_abs":       filepath.Join(ws, "sub"),
		"dangling_in":       "sub/missing.txt",
		"sub/deep/up_in":    "../..",
		"sub/deep/self_abs": filepath.Join(ws, "sub/deep/file.txt"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	return base, ws, out
}

// snapshot describes everything under dir except skip: names, modes,
// sizes, mtimes and file contents.
func snapshot(t *testing.T, dir, skip string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if p == skip {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		b.WriteString(p + " " + fi.Mode().String() + " " + fi.ModTime().String())
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			b.WriteString(" " + string(data))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

func loadEscapePaths(t *testing.T, ws, out string) []string {
	f, err := os.Open("testdata/escape_paths.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var paths []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.ReplaceAll(line, "{WS}", ws)
		line = strings.ReplaceAll(line, "{OUT}", out)
		paths = append(paths, line)
	}
	return paths
}

// TestEscapeCorpus sends every path of the corpus through every request
// that takes a path, in every argument position, and checks that nothing
// outside the workspace was read, changed or revealed.
func TestEscapeCorpus(t *testing.T) {
	base, ws, out := escapeFixture(t)
	before := snapshot(t, base, ws)
	c := newClientFor(t, ws, nil)
	ctx := ctxT(t)
	paths := loadEscapePaths(t, ws, out)
	inside := []string{"plain.txt", "sub", "link_in", "link_in_abs/deep/file.txt", "dangling_in", "newname"}

	var leaks []string
	check := func(op, p string, data []byte, err error, sent ...string) {
		sent = append(sent, p)
		if bytes.Contains(data, []byte("CANARY")) {
			leaks = append(leaks, op+" "+p+": read the canary")
		}
		if err != nil {
			msg := err.Error()
			given := strings.Join(sent, " ")
			if strings.Contains(msg, "CANARY") || strings.Contains(msg, secretName) ||
				(strings.Contains(msg, base) && !strings.Contains(given, base)) {
				leaks = append(leaks, op+" "+p+": message reveals a host path: "+msg)
			}
		}
	}
	readAll := func(p string) ([]byte, error) {
		f, err := c.Open(ctx, p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return io.ReadAll(f)
	}
	join := func(p, name string) string { return strings.TrimSuffix(p, "/") + "/" + name }
	for _, p := range paths {
		data, err := readAll(p)
		check("read", p, data, err)
		if err == nil {
			leaks = append(leaks, "read "+p+" succeeded")
		}
		_, err = c.Stat(ctx, p)
		check("stat", p, nil, err)
		_, err = c.Lstat(ctx, p)
		check("lstat", p, nil, err)
		entries, err := c.ReadDir(ctx, p)
		for _, e := range entries {
			if e.Name() == secretName {
				leaks = append(leaks, "readdir "+p+" listed the canary")
			}
		}
		check("readdir", p, nil, err)
		target, err := c.ReadLink(ctx, p)
		check("readlink", p, []byte(target), err)
		if err == nil && (strings.Contains(target, out) || strings.Contains(target, base) || strings.HasPrefix(target, "..")) {
			leaks = append(leaks, "readlink "+p+" revealed "+target)
		}
		rp, err := c.RealPath(ctx, p)
		check("realpath", p, []byte(rp), err)
		if err == nil && (strings.HasPrefix(rp, base) && !strings.HasPrefix(p, base) || strings.Contains(rp, "..")) {
			leaks = append(leaks, "realpath "+p+" gave "+rp)
		}
		for _, flags := range []int{os.O_WRONLY | os.O_CREATE | os.O_TRUNC, os.O_WRONLY | os.O_APPEND, os.O_RDWR | os.O_CREATE, os.O_WRONLY | os.O_CREATE | os.O_EXCL} {
			f, err := c.OpenFile(ctx, p, flags, 0o666)
			check("open", p, nil, err)
			if err == nil {
				f.WriteAt([]byte("PWNED"), 0)
				f.Close()
			}
		}
		check("mkdir", p, nil, c.Mkdir(ctx, join(p, "made"), 0o777))
		check("mkdir", p, nil, c.Mkdir(ctx, p, 0o777))
		check("chmod", p, nil, c.Chmod(ctx, p, 0o777))
		check("setstat", p, nil, c.statusReq(ctx, "setstat", p, fxpSetstat, func(b []byte) []byte {
			b = appendString(b, p)
			return appendAttrs(b, &Attrs{Flags: attrSize | attrACModTime, Size: 0, Atime: 1, Mtime: 1})
		}))
		check("symlink-target", p, nil, c.Symlink(ctx, p, "sym-"+strings.NewReplacer("/", "_", ".", "d").Replace(p)))
		check("symlink-link", p, nil, c.Symlink(ctx, "plain.txt", p))
		check("symlink-link-new", p, nil, c.Symlink(ctx, "plain.txt", join(p, "newlink")))
		for _, in := range inside {
			check("hardlink", p, nil, c.statusReq(ctx, "link", p, fxpExtended, func(b []byte) []byte {
				return appendString(appendString(appendString(b, extHardlink), p), join(p, "../hl"))
			}))
			check("hardlink-new", p, nil, c.statusReq(ctx, "link", p, fxpExtended, func(b []byte) []byte {
				return appendString(appendString(appendString(b, extHardlink), in), join(p, "hl"))
			}))
			check("rename-to", p, nil, c.statusReq(ctx, "rename", p, fxpRename, func(b []byte) []byte {
				return appendString(appendString(b, in), join(p, "moved"))
			}))
			check("rename-from", p, nil, c.statusReq(ctx, "rename", p, fxpRename, func(b []byte) []byte {
				return appendString(appendString(b, join(p, "canary.txt")), in+".stolen")
			}))
			check("posix-rename-from", p, nil, c.statusReq(ctx, "rename", p, fxpExtended, func(b []byte) []byte {
				return appendString(appendString(appendString(b, extPosixRename), join(p, "canary.txt")), "stolen")
			}))
		}
		check("remove", p, nil, c.Remove(ctx, join(p, "canary.txt")))
		check("rmdir", p, nil, c.RemoveDir(ctx, p))
		check("remove", p, nil, c.Remove(ctx, p))
	}
	for _, l := range leaks {
		t.Error(l)
	}
	if after := snapshot(t, base, ws); after != before {
		t.Fatalf("outside the workspace changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// No link the server created points outside (SYMLINK validated both
	// ends): every link made by the corpus stays inside lexically.
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		rel, _ := filepath.Rel(ws, p)
		if base := filepath.Base(p); !strings.HasPrefix(base, "sym-") && base != "newlink" {
			return nil // a fixture link, possibly moved by a rename
		}
		target, _ := os.Readlink(p)
		if filepath.IsAbs(target) {
			t.Errorf("server-made link %s has absolute target %s", rel, target)
			return nil
		}
		if resolved := filepath.Join(filepath.Dir(p), target); resolved != ws && !strings.HasPrefix(resolved, ws+"/") {
			t.Errorf("server-made link %s -> %s leaves the workspace", rel, target)
		}
		return nil
	})
}

// TestRenameRoot: the root can be neither end of a rename, nor removed.
func TestRenameRoot(t *testing.T) {
	c, dir := newTestClient(t)
	ctx := ctxT(t)
	writeFile(t, filepath.Join(dir, "f.txt"), "x")
	os.Mkdir(filepath.Join(dir, "d"), 0o755)
	for _, tc := range [][2]string{{"/", "moved"}, {".", "moved"}, {"", "moved"}, {dir, "moved"}, {"d/..", "x"},
		{"f.txt", "/"}, {"f.txt", "."}, {"d", "/"}, {"f.txt", dir}, {"f.txt", "d/.."}} {
		for _, typ := range []string{"v3", "posix"} {
			var err error
			if typ == "v3" {
				err = c.statusReq(ctx, "rename", tc[0], fxpRename, func(b []byte) []byte { return appendString(appendString(b, tc[0]), tc[1]) })
			} else {
				err = c.statusReq(ctx, "rename", tc[0], fxpExtended, func(b []byte) []byte {
					return appendString(appendString(appendString(b, extPosixRename), tc[0]), tc[1])
				})
			}
			if err == nil {
				t.Errorf("%s rename %q -> %q succeeded", typ, tc[0], tc[1])
			}
		}
	}
	for _, p := range []string{"/", ".", dir} {
		if c.Remove(ctx, p) == nil || c.RemoveDir(ctx, p) == nil {
			t.Errorf("removing the root as %q succeeded", p)
		}
	}
	if readFile(t, filepath.Join(dir, "f.txt")) != "x" {
		t.Fatal("workspace damaged")
	}
}

// TestLinksInside: links that stay inside work, including absolute ones
// under the root's host path, and READLINK shows them as workspace paths.
func TestLinksInside(t *testing.T) {
	_, ws, _ := escapeFixture(t)
	c := newClientFor(t, ws, nil)
	ctx := ctxT(t)
	for _, p := range []string{"link_in/deep/file.txt", "link_in_abs/deep/file.txt", "sub/deep/self_abs", "sub/deep/up_in/sub/deep/file.txt"} {
		f, err := c.Open(ctx, p)
		if err != nil {
			t.Errorf("open %s: %v", p, err)
			continue
		}
		data, _ := io.ReadAll(f)
		f.Close()
		if string(data) != "inside" {
			t.Errorf("%s read %q", p, data)
		}
	}
	for p, want := range map[string]string{"link_in": "sub", "link_in_abs": "/sub", "dangling_in": "sub/missing.txt"} {
		if got, err := c.ReadLink(ctx, p); err != nil || got != want {
			t.Errorf("readlink %s = %q, %v; want %q", p, got, err, want)
		}
	}
	if rp, err := c.RealPath(ctx, "link_in_abs/deep"); err != nil || rp != "/sub/deep" {
		t.Errorf("realpath = %q %v", rp, err)
	}
	// An absolute target given by the client is a workspace path, stored
	// relative to the link.
	if err := c.Symlink(ctx, "/sub/deep/file.txt", "sub/abs_link"); err != nil {
		t.Fatal(err)
	}
	if target, _ := os.Readlink(filepath.Join(ws, "sub/abs_link")); target != "deep/file.txt" {
		t.Fatalf("stored target %q", target)
	}
	// A dangling link inside: creating through it creates the target.
	f, err := c.Create(ctx, "dangling_in")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("made"))
	f.Close()
	if readFile(t, filepath.Join(ws, "sub/missing.txt")) != "made" {
		t.Fatal("create through a dangling inside link")
	}
	_ = context.Background
	_ = sort.Strings
}

// TestEscapeCorpusOpenSSHClient drives a few escapes with OpenSSH's sftp
// against `agent-backend sftp-server`: every one fails, nothing outside
// changes, no canary byte reaches the client.
func TestEscapeCorpusOpenSSHClient(t *testing.T) {
	needTool(t, "sftp")
	bin := agentBackendBin(t)
	base, ws, out := escapeFixture(t)
	before := snapshot(t, base, ws)
	local := tempDir(t)
	writeFile(t, filepath.Join(local, "up.txt"), "PWNED")
	var batch strings.Builder
	for _, p := range loadEscapePaths(t, ws, out) {
		for _, cmd := range []string{
			"-get " + p + " " + local + "/got",
			"-get " + p + "/canary.txt " + local + "/got",
			"-put " + local + "/up.txt " + p,
			"-put " + local + "/up.txt " + p + "/new.txt",
			"-ls " + p,
			"-rename plain.txt " + p + "/moved",
			"-rename " + p + "/canary.txt stolen",
			"-symlink " + p + " sym-link",
			"-rm " + p + "/canary.txt",
			"-chmod 777 " + p,
			"-mkdir " + p + "/made",
			"-rmdir " + p,
		} {
			batch.WriteString(cmd + "\n")
		}
	}
	batch.WriteString("-cd ..\n-cd link_out_rel\npwd\n")
	output, err := runSFTPBatch(t, t.TempDir(), bin+" sftp-server --rootDir "+ws, batch.String())
	if err != nil {
		t.Fatalf("sftp: %v\n%s", err, output)
	}
	if strings.Contains(output, canaryText) || strings.Contains(output, secretName) {
		t.Fatalf("output reveals outside content:\n%s", output)
	}
	if !strings.Contains(output, "Remote working directory: /\n") {
		t.Errorf("cd out of the root moved the working directory:\n%s", output)
	}
	if b, err := os.ReadFile(filepath.Join(local, "got")); err == nil && bytes.Contains(b, []byte("CANARY")) {
		t.Fatal("the canary was downloaded")
	}
	if after := snapshot(t, base, ws); after != before {
		t.Fatalf("outside the workspace changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestLinkCannotBeMadeToEscape: links that are harmless one by one must
// not combine into one that leads out on the host, nor be moved (RENAME,
// posix-rename, hardlink) to where their relative target leads out.
func TestLinkCannotBeMadeToEscape(t *testing.T) {
	base, ws, _ := escapeFixture(t)
	c := newClientFor(t, ws, nil)
	ctx := ctxT(t)
	if err := c.Mkdir(ctx, "d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.Symlink(ctx, "..", "d/up"); err != nil { // d/.. is the root: fine
		t.Fatal(err)
	}
	for _, tc := range [][2]string{
		{"d/up/..", "m1"},                    // through d/up to the root, then out
		{"d/up/../outside/canary.txt", "m2"}, // same, to the canary
		{"sub/deep/up_in/..", "m3"},          // fixture link to the root, then out
		{"link_in/../..", "m4"},              // link to sub, then two up
	} {
		if err := c.Symlink(ctx, tc[0], tc[1]); err == nil {
			t.Errorf("symlink %s -> %s was created", tc[1], tc[0])
		}
	}
	if err := c.Symlink(ctx, "d/up/plain.txt", "ok1"); err != nil {
		t.Errorf("a link that stays inside was refused: %v", err)
	}
	for _, move := range []func() error{
		func() error {
			return c.statusReq(ctx, "rename", "d/up", fxpRename, func(b []byte) []byte { return appendString(appendString(b, "d/up"), "up2") })
		},
		func() error { return c.Rename(ctx, "d/up", "up3") },
		func() error {
			return c.statusReq(ctx, "link", "d/up", fxpExtended, func(b []byte) []byte {
				return appendString(appendString(appendString(b, extHardlink), "d/up"), "up4")
			})
		},
	} {
		if err := move(); err == nil {
			t.Error("a link was moved to where it leads out")
		}
	}
	if err := c.Rename(ctx, "d/up", "d/up-renamed"); err != nil {
		t.Errorf("renaming a link within its directory: %v", err)
	}
	// Every link the server made resolves inside on the host.
	for _, name := range []string{"d/up-renamed", "ok1", "m1", "m2", "m3", "m4", "up2", "up3", "up4"} {
		p := filepath.Join(ws, name)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err == nil && real != ws && !strings.HasPrefix(real, ws+"/") {
			t.Errorf("%s resolves to %s on the host", name, real)
		}
	}
	_ = base
}
