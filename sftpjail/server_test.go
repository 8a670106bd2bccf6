package sftpjail

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeFile(t testing.TB, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPutGetRoundTrip(t *testing.T) {
	c, dir := newTestClient(t)
	ctx := ctxT(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 300000) // ~4.6 MiB, not a chunk multiple
	data = append(data, "tail"...)
	f, err := c.Create(ctx, "/deep/er/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(f, bytes.NewReader(data)); err != nil || n != int64(len(data)) {
		t.Fatalf("upload: %d %v", n, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "deep/er/big.bin")); !bytes.Equal(got, data) {
		t.Fatalf("host file differs: %d bytes", len(got))
	}
	fi, _ := os.Stat(filepath.Join(dir, "deep/er"))
	if fi.Mode().Perm() != 0o755&^umask() {
		t.Errorf("auto-created parent mode %v", fi.Mode())
	}
	r, err := c.Open(ctx, "deep/er/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := io.Copy(&got, r); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("download differs: %d bytes", got.Len())
	}
	// ReadAt across the end returns io.EOF with the bytes that exist.
	buf := make([]byte, 100000)
	n, err := r.ReadAt(buf, int64(len(data)-10))
	if n != 10 || err != io.EOF || string(buf[:n]) != string(data[len(data)-10:]) {
		t.Fatalf("ReadAt at end: %d %v", n, err)
	}
	if n, err := r.ReadAt(buf, int64(len(data)+5)); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt past end: %d %v", n, err)
	}
	r.Close()
}

func umask() fs.FileMode {
	f, err := os.CreateTemp("", "umask")
	if err != nil {
		return 0o022
	}
	defer os.Remove(f.Name())
	f.Close()
	os.Chmod(f.Name(), 0o777)
	dir, _ := os.MkdirTemp("", "umask")
	defer os.Remove(dir)
	os.Remove(dir)
	os.Mkdir(dir, 0o777)
	fi, err := os.Stat(dir)
	if err != nil {
		return 0o022
	}
	return 0o777 &^ fi.Mode().Perm()
}

func TestFileOps(t *testing.T) {
	c, dir := newTestClient(t)
	ctx := ctxT(t)
	writeFile(t, filepath.Join(dir, "a.txt"), "hello")

	fi, err := c.Stat(ctx, "/a.txt")
	if err != nil || fi.Size() != 5 || !fi.Mode().IsRegular() {
		t.Fatalf("Stat: %v %v", fi, err)
	}
	// The conventions' second case: the host path of the root works too.
	if fi, err := c.Stat(ctx, dir+"/a.txt"); err != nil || fi.Size() != 5 {
		t.Fatalf("Stat host path: %v", err)
	}
	if _, err := c.Stat(ctx, "nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat missing: %v", err)
	}

	if err := c.Mkdir(ctx, "d", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := c.MkdirAll(ctx, "d/x/y/z", 0o755); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "d/x/y/z")); err != nil || !fi.IsDir() {
		t.Fatalf("MkdirAll: %v", err)
	}
	if err := c.Mkdir(ctx, "d", 0o700); err == nil {
		t.Fatal("Mkdir of an existing dir succeeded")
	}

	// RENAME (v3) refuses to replace; posix-rename replaces.
	writeFile(t, filepath.Join(dir, "b.txt"), "bee")
	if err := c.statusReq(ctx, "rename", "a.txt", fxpRename, func(b []byte) []byte {
		return appendString(appendString(b, "a.txt"), "b.txt")
	}); err == nil {
		t.Fatal("v3 RENAME replaced an existing file")
	}
	if err := c.Rename(ctx, "a.txt", "b.txt"); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(dir, "b.txt")) != "hello" {
		t.Fatal("posix-rename did not replace")
	}
	// RENAME creates the destination's parent.
	if err := c.statusReq(ctx, "rename", "b.txt", fxpRename, func(b []byte) []byte {
		return appendString(appendString(b, "b.txt"), "new/parent/c.txt")
	}); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(dir, "new/parent/c.txt")) != "hello" {
		t.Fatal("rename into a new parent")
	}

	if err := c.Chmod(ctx, "new/parent/c.txt", 0o600|fs.ModeSetuid|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	fi, _ = os.Stat(filepath.Join(dir, "new/parent/c.txt"))
	if fi.Mode() != 0o600 {
		t.Fatalf("chmod gave %v, want -rw------- without setuid/setgid", fi.Mode())
	}

	// REMOVE never removes a directory; RMDIR only empty ones.
	if err := c.statusReq(ctx, "remove", "d", fxpRemove, func(b []byte) []byte { return appendString(b, "d/x/y/z") }); err == nil {
		t.Fatal("REMOVE removed a directory")
	}
	if err := c.RemoveDir(ctx, "d/x"); err == nil {
		t.Fatal("RMDIR removed a non-empty directory")
	}
	if err := c.RemoveDir(ctx, "new/parent/c.txt"); err == nil {
		t.Fatal("RMDIR removed a file")
	}
	if err := c.RemoveAll(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "d")); !os.IsNotExist(err) {
		t.Fatalf("RemoveAll left d: %v", err)
	}
	if err := c.Remove(ctx, "new/parent/c.txt"); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(ctx, "new/parent"); err != nil {
		t.Fatal(err)
	}

	if p, err := c.RealPath(ctx, "."); err != nil || p != "/" {
		t.Fatalf("RealPath . = %q %v", p, err)
	}
	if p, err := c.RealPath(ctx, "new//./x/../y"); err != nil || p != "/new/y" {
		t.Fatalf("RealPath = %q %v", p, err)
	}
	if p, err := c.RealPath(ctx, dir); err != nil || p != "/" {
		t.Fatalf("RealPath host root = %q %v", p, err)
	}
}

func TestReadDirBatchesAndLongNames(t *testing.T) {
	c, dir := newTestClient(t)
	ctx := ctxT(t)
	const n = 250
	for i := 0; i < n; i++ {
		writeFile(t, filepath.Join(dir, "many", "f"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+strconv.Itoa(i)), "x")
	}
	entries, err := c.ReadDir(ctx, "many")
	if err != nil || len(entries) != n {
		t.Fatalf("ReadDir: %d entries, %v", len(entries), err)
	}
	// Raw READDIR: batches of at most 100, then EOF; long names like ls -l.
	r, _ := c.pathReq(ctx, fxpOpendir, "many")
	h, err := handleOf(&r)
	if err != nil {
		t.Fatal(err)
	}
	total, batches := 0, 0
	for {
		r, err := c.roundTrip(ctx, func(b []byte) []byte { return appendString(b, h) }, fxpReaddir)
		if err != nil {
			t.Fatal(err)
		}
		es, err := names(&r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(es) > readdirBatch {
			t.Fatalf("batch of %d", len(es))
		}
		batches++
		total += len(es)
		for _, e := range es {
			if !strings.HasPrefix(e.long, "-rw-r--r--    1 ") || !strings.HasSuffix(e.long, " "+e.name) {
				t.Fatalf("long name %q", e.long)
			}
		}
	}
	c.closeHandle(h)
	if total != n || batches < 3 {
		t.Fatalf("%d entries in %d batches", total, batches)
	}
}

func TestModeString(t *testing.T) {
	for _, tc := range []struct {
		mode uint32
		want string
	}{
		{sIFREG | 0o644, "-rw-r--r--"},
		{sIFDIR | 0o755, "drwxr-xr-x"},
		{sIFLNK | 0o777, "lrwxrwxrwx"},
		{sIFREG | 0o4755, "-rwsr-xr-x"},
		{sIFREG | 0o2644, "-rw-r-Sr--"},
		{sIFDIR | 0o1777, "drwxrwxrwt"},
		{sIFIFO | 0o600, "prw-------"},
		{sIFCHR | 0o666, "crw-rw-rw-"},
	} {
		if got := modeString(tc.mode); got != tc.want {
			t.Errorf("modeString(%o) = %q, want %q", tc.mode, got, tc.want)
		}
	}
}

func TestOpenFlags(t *testing.T) {
	for _, tc := range []struct {
		pflags uint32
		want   int
	}{
		{flagRead, os.O_RDONLY},
		{flagWrite, os.O_WRONLY},
		{flagRead | flagWrite, os.O_RDWR},
		{flagWrite | flagCreat | flagTrunc, os.O_WRONLY | os.O_CREATE | os.O_TRUNC},
		{flagWrite | flagCreat | flagExcl, os.O_WRONLY | os.O_CREATE | os.O_EXCL},
		{flagWrite | flagAppend, os.O_WRONLY | os.O_APPEND},
		{0, os.O_RDONLY},
	} {
		if got := openFlags(tc.pflags); got != tc.want {
			t.Errorf("openFlags(%#x) = %#x, want %#x", tc.pflags, got, tc.want)
		}
	}
}

func TestOpenSemantics(t *testing.T) {
	c, dir := newTestClient(t)
	ctx := ctxT(t)
	// Default mode 0644 for a new file.
	f, err := c.OpenFile(ctx, "new.txt", os.O_WRONLY|os.O_CREATE, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	// OpenFile with O_CREATE sends perm 0; the raw request without the
	// permissions attribute must give 0644.
	r, err := c.roundTrip(ctx, func(b []byte) []byte {
		b = appendString(b, "def.txt")
		b = appendU32(b, flagWrite|flagCreat)
		return appendAttrs(b, &Attrs{})
	}, fxpOpen)
	if err != nil {
		t.Fatal(err)
	}
	h, err := handleOf(&r)
	if err != nil {
		t.Fatal(err)
	}
	c.closeHandle(h)
	if fi, _ := os.Stat(filepath.Join(dir, "def.txt")); fi.Mode().Perm() != 0o644&^umask() {
		t.Fatalf("default mode %v", fi.Mode())
	}
	// EXCL on an existing file fails.
	if _, err := c.OpenFile(ctx, "def.txt", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
		t.Fatal("O_EXCL on an existing file succeeded")
	}
	// APPEND ignores the offset, as OpenSSH's sftp-server does.
	writeFile(t, filepath.Join(dir, "log.txt"), "one\n")
	f, err = c.OpenFile(ctx, "log.txt", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("two\n"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("three\n"), 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := readFile(t, filepath.Join(dir, "log.txt")); got != "one\ntwo\nthree\n" {
		t.Fatalf("append gave %q", got)
	}
	// Write without CREAT to a missing file: NO_SUCH_FILE, no parent made.
	if _, err := c.OpenFile(ctx, "nodir/x.txt", os.O_WRONLY, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open missing for write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nodir")); !os.IsNotExist(err) {
		t.Fatal("a write without CREAT created a parent directory")
	}
	// Read of a directory handle as a file, and of a bogus handle.
	if err := c.statusReq(ctx, "read", "x", fxpRead, func(b []byte) []byte {
		b = appendString(b, "999")
		b = appendU64(b, 0)
		return appendU32(b, 10)
	}); err == nil {
		t.Fatal("READ on a bogus handle succeeded")
	}
}

func TestErrorMapping(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Log("running as root: EACCES cannot be provoked through file modes; mapping checked directly")
	}
	for _, tc := range []struct {
		err  error
		want uint32
	}{
		{&fs.PathError{Op: "open", Path: "x", Err: errnoENOENT}, statusNoSuchFile},
		{&fs.PathError{Op: "open", Path: "x", Err: errnoEACCES}, statusPermissionDenied},
		{&fs.PathError{Op: "open", Path: "x", Err: errnoEISDIR}, statusFailure},
		{errEscapeWrapped, statusPermissionDenied},
		{errors.New("other"), statusFailure},
	} {
		if got := statusCode(tc.err); got != tc.want {
			t.Errorf("statusCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	c, dir := newTestClient(t)
	ctx := ctxT(t)
	_, err := c.Stat(ctx, "/missing/file")
	var se *StatusError
	if !errors.As(err, &se) || se.Code != statusNoSuchFile {
		t.Fatalf("stat missing: %v", err)
	}
	if strings.Contains(se.Message, dir) || !strings.Contains(se.Message, "/missing/file") {
		t.Fatalf("message %q must name the client path, not the host path", se.Message)
	}
	_, err = c.Stat(ctx, "../x")
	if !errors.As(err, &se) || se.Code != statusPermissionDenied || strings.Contains(se.Message, dir) {
		t.Fatalf("escape: %v", err)
	}
}

func TestHandleBoundAndCleanup(t *testing.T) {
	dir := tempDir(t)
	writeFile(t, filepath.Join(dir, "f"), "x")
	c := newClientFor(t, dir, &ServerOptions{MaxHandles: 3})
	ctx := ctxT(t)
	var files []*File
	for i := 0; i < 3; i++ {
		f, err := c.Open(ctx, "f")
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if _, err := c.Open(ctx, "f"); err == nil {
		t.Fatal("a 4th handle was granted with MaxHandles 3")
	}
	files[0].Close()
	if f, err := c.Open(ctx, "f"); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	if err := files[0].Close(); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("double close: %v", err)
	}
	// The rest stay open; the session's end must close them (checked by
	// the fd count below).
}

func TestSessionEndClosesHandles(t *testing.T) {
	dir := tempDir(t)
	writeFile(t, filepath.Join(dir, "f"), "x")
	before := countFDs(t)
	rw, wait := startServer(t, dir, nil)
	c, err := NewClient(rw)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	for i := 0; i < 20; i++ {
		if _, err := c.Open(ctx, "f"); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if after := countFDs(t); after > before {
		t.Fatalf("%d file descriptors before, %d after the session", before, after)
	}
}

func countFDs(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(es)
}

// TestWorkerSettings: serial (1) and concurrent settings give the same
// results for a pipelined transfer.
func TestWorkerSettings(t *testing.T) {
	data := bytes.Repeat([]byte("serial-or-not "), 200000)
	for _, o := range []ServerOptions{{Workers: 1}, {}, {Workers: 2, alwaysConcurrent: true}, {Workers: 16, alwaysConcurrent: true}} {
		w := o.Workers
		dir := tempDir(t)
		c := newClientFor(t, dir, &o)
		ctx := ctxT(t)
		f, err := c.Create(ctx, "x.bin")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		f.Close()
		r, _ := c.Open(ctx, "x.bin")
		got := make([]byte, len(data)+10)
		n, err := r.ReadAt(got, 0)
		r.Close()
		if n != len(data) || err != io.EOF || !bytes.Equal(got[:n], data) {
			t.Fatalf("Workers %d: %d bytes, %v", w, n, err)
		}
	}
}

// TestExtensions: hardlink@openssh.com, fsync@openssh.com and
// limits@openssh.com.
func TestExtensions(t *testing.T) {
	c, dir := newTestClient(t)
	ctx := ctxT(t)
	for _, e := range []string{extPosixRename, extHardlink, extFsync, extLimits} {
		if !c.HasExtension(e) {
			t.Errorf("extension %s not announced", e)
		}
	}
	if c.chunk != defaultChunk {
		t.Errorf("chunk %d after limits", c.chunk)
	}
	f, err := c.Create(ctx, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("data"))
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := c.statusReq(ctx, "link", "a.txt", fxpExtended, func(b []byte) []byte {
		return appendString(appendString(appendString(b, extHardlink), "a.txt"), "b.txt")
	}); err != nil {
		t.Fatal(err)
	}
	a, _ := os.Stat(filepath.Join(dir, "a.txt"))
	b, _ := os.Stat(filepath.Join(dir, "b.txt"))
	if !os.SameFile(a, b) {
		t.Fatal("hardlink did not link")
	}
	if err := c.statusReq(ctx, "x", "x", fxpExtended, func(b []byte) []byte { return appendString(b, "nope@example.com") }); err == nil {
		t.Fatal("unknown extension accepted")
	} else if se := new(StatusError); !errors.As(err, &se) || se.Code != statusOpUnsupported {
		t.Fatalf("unknown extension: %v", err)
	}
	// FSETSTAT: truncate and chmod through the handle.
	f, _ = c.OpenFile(ctx, "a.txt", os.O_RDWR, 0)
	if err := f.c.statusReq(ctx, "fsetstat", "a.txt", fxpFsetstat, func(b []byte) []byte {
		b = appendString(b, f.handle)
		return appendAttrs(b, &Attrs{Flags: attrSize | attrPermissions | attrACModTime, Size: 2, Mode: 0o6640, Atime: 1000, Mtime: 2000})
	}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fi, _ := os.Stat(filepath.Join(dir, "a.txt"))
	if fi.Size() != 2 || fi.Mode() != 0o640 || fi.ModTime().Unix() != 2000 {
		t.Fatalf("fsetstat: size %d mode %v mtime %d", fi.Size(), fi.Mode(), fi.ModTime().Unix())
	}
	// SETSTAT on a path: size and times.
	if err := c.statusReq(ctx, "setstat", "b.txt", fxpSetstat, func(b []byte) []byte {
		b = appendString(b, "b.txt")
		return appendAttrs(b, &Attrs{Flags: attrSize | attrACModTime, Size: 1, Atime: 3000, Mtime: 4000})
	}); err != nil {
		t.Fatal(err)
	}
	fi, _ = os.Stat(filepath.Join(dir, "b.txt"))
	if fi.Size() != 1 || fi.ModTime().Unix() != 4000 {
		t.Fatalf("setstat: size %d mtime %d", fi.Size(), fi.ModTime().Unix())
	}
}

// TestAdaptiveConcurrency: data requests run inline until a few in a row
// are slow, then a burst of them may run concurrently; serial sessions never do.
func TestAdaptiveConcurrency(t *testing.T) {
	s := &session{}
	if s.goConcurrent() {
		t.Fatal("concurrent before any slow request")
	}
	s.noteDuration(slowOp / 2)
	if s.goConcurrent() {
		t.Fatal("a fast request started a burst")
	}
	for i := 0; i < slowRun; i++ {
		if s.goConcurrent() {
			t.Fatalf("a burst after %d slow requests", i)
		}
		s.noteDuration(slowOp)
	}
	for i := 0; i < concurrentBurst; i++ {
		if !s.goConcurrent() {
			t.Fatalf("burst ended after %d requests", i)
		}
	}
	if s.goConcurrent() {
		t.Fatal("burst did not end")
	}
	serial := &session{serial: true}
	serial.noteDuration(time.Second)
	if serial.goConcurrent() {
		t.Fatal("a serial session went concurrent")
	}
}

// TestFIFODoesNotStall: a FIFO in the workspace cannot block the session
// (no writer or reader ever appears).
func TestFIFODoesNotStall(t *testing.T) {
	c, dir := newTestClient(t)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if f, err := c.Open(ctx, "fifo"); err == nil {
		_, rerr := f.ReadAt(make([]byte, 10), 0)
		f.Close()
		if rerr == nil {
			t.Error("read from an empty FIFO returned data")
		}
	}
	c.OpenFile(ctx, "fifo", os.O_WRONLY, 0)
	if _, err := c.ReadDir(ctx, "fifo"); err == nil {
		t.Error("OPENDIR of a FIFO succeeded")
	}
	c.statusReq(ctx, "setstat", "fifo", fxpSetstat, func(b []byte) []byte {
		return appendAttrs(appendString(b, "fifo"), &Attrs{Flags: attrSize})
	})
	if _, err := c.Stat(ctx, "fifo"); err != nil || ctx.Err() != nil {
		t.Fatalf("session stalled: %v %v", err, ctx.Err())
	}
}

// TestPosixRenameReplaces: posix-rename over a regular file replaces it
// (across directories too) and leaves nothing under the old name; over a
// directory, and of a directory over a file, it fails and changes nothing.
func TestPosixRenameReplaces(t *testing.T) {
	ctx := context.Background()
	c, dir := newTestClient(t)
	mustMkdir := func(p string) {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustMkdir("sub")
	mustMkdir("adir")
	mustMkdir("bdir/inner")
	writeFile(t, filepath.Join(dir, "new.tmp"), "new")
	writeFile(t, filepath.Join(dir, "sub", "target"), "old")
	if err := c.Rename(ctx, "new.tmp", "sub/target"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "sub", "target")); got != "new" {
		t.Fatalf("target holds %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "new.tmp")); !os.IsNotExist(err) {
		t.Fatalf("the old name is still there: %v", err)
	}
	writeFile(t, filepath.Join(dir, "f"), "f")
	if err := c.Rename(ctx, "f", "adir"); err == nil {
		t.Error("a file replaced a directory")
	}
	if err := c.Rename(ctx, "bdir", "sub/target"); err == nil {
		t.Error("a directory replaced a file")
	}
	if got := readFile(t, filepath.Join(dir, "f")); got != "f" {
		t.Errorf("f holds %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "sub", "target")); got != "new" {
		t.Errorf("target holds %q", got)
	}
	for _, d := range []string{"adir", "bdir/inner"} {
		if fi, err := os.Stat(filepath.Join(dir, d)); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
}

// TestReplaceRegular: posix-rename's swap path takes a regular file over a
// regular file, and declines (changing nothing) a directory as the source
// or a missing destination, which the rename then handles.
func TestReplaceRegular(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s := &session{root: root}
	writeFile(t, filepath.Join(dir, "new"), "new")
	writeFile(t, filepath.Join(dir, "target"), "old")
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	info := func(p string) fs.FileInfo {
		fi, err := root.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	if s.replaceRegular(info("d"), "d", "target") {
		t.Fatal("a directory was swapped over a file")
	}
	if s.replaceRegular(info("new"), "new", "absent") {
		t.Fatal("swapped with nothing")
	}
	if !s.replaceRegular(info("new"), "new", "target") {
		t.Fatal("file over file not swapped")
	}
	if got := readFile(t, filepath.Join(dir, "target")); got != "new" {
		t.Fatalf("target holds %q", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, "d")); err != nil || !fi.IsDir() {
		t.Fatalf("d: %v", err)
	}
}
