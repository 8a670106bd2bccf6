package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeEtcRoot builds a root holding an /etc with the kinds of entries the
// stage must handle.
func fakeEtcRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"etc/passwd":                         "root:x:0:0::/root:/bin/sh\n",
		"etc/shadow":                         "root:SECRET:1::::::\n",
		"etc/hosts":                          "127.0.0.1 localhost\n",
		"run/resolv.conf":                    "nameserver 127.0.0.53\n",
		"etc/ssl/certs/ca-certificates.crt":  "BUNDLE\n",
		"etc/ssl/private/key.pem":            "PRIVATE\n",
		"etc/alternatives/README":            "alternatives\n",
		"etc/ld.so.cache":                    "cache",
		"etc/nsswitch.conf":                  "hosts: files dns\n",
		"etc/group":                          "root:x:0:\n",
		"etc/unrelated.conf":                 "do not copy\n",
		"usr/share/zoneinfo/Etc/UTC":         "TZif",
		"usr/share/ca-certificates/a.crt":    "A\n",
		"etc/pki/ca-trust/source/anchors/.k": "",
	}
	for p, c := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"etc/resolv.conf":       "../run/resolv.conf",          // relative, outside /usr: copied
		"etc/localtime":         "/usr/share/zoneinfo/Etc/UTC", // into /usr: kept as a link
		"etc/ssl/certs/a.pem":   "/usr/share/ca-certificates/a.crt",
		"etc/ssl/certs/1a2b.0":  "a.pem",
		"etc/alternatives/awk":  "/usr/bin/mawk",
		"etc/ssl/certs/dangles": "/nowhere",
	}
	for p, target := range links {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestEtcStage(t *testing.T) {
	root := fakeEtcRoot(t)
	st, err := newEtcStage(root)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(st.base)
	dir, err := st.current()
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		data, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(data)
	}
	if got := read("passwd"); got != "root:x:0:0::/root:/bin/sh\n" {
		t.Errorf("passwd = %q", got)
	}
	if got := read("resolv.conf"); got != "nameserver 127.0.0.53\n" {
		t.Errorf("resolv.conf (a link out of /usr) = %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "resolv.conf")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("resolv.conf not copied as a file: %v", err)
	}
	for p, want := range map[string]string{
		"localtime": "/usr/share/zoneinfo/Etc/UTC", "ssl/certs/a.pem": "/usr/share/ca-certificates/a.crt",
		"ssl/certs/1a2b.0": "a.pem", "alternatives/awk": "/usr/bin/mawk", "ssl/certs/dangles": "/nowhere",
	} {
		if got, err := os.Readlink(filepath.Join(dir, p)); err != nil || got != want {
			t.Errorf("%s -> %q (%v), want -> %q", p, got, err, want)
		}
	}
	if got := read("ssl/certs/ca-certificates.crt"); got != "BUNDLE\n" {
		t.Errorf("bundle = %q", got)
	}
	for _, p := range []string{"shadow", "ssl/private", "unrelated.conf"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s copied into the stage", p)
		}
	}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is group/world writable: %v", p, fi.Mode())
		}
		return nil
	})

	// Unchanged sources: the same generation, even after the recheck time.
	st.next = time.Time{}
	if again, _ := st.current(); again != dir {
		t.Fatalf("unchanged sources gave a new generation %s", again)
	}
	// A changed source: a new generation after the recheck time, the
	// previous one kept.
	if err := os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\nagent:x:1000:1000::/w:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(root, "etc/passwd"), future, future)
	if d, _ := st.current(); d != dir {
		t.Fatal("stage rebuilt before the recheck time")
	}
	st.next = time.Time{}
	dir2, _ := st.current()
	if data, _ := os.ReadFile(filepath.Join(dir2, "passwd")); dir2 == dir || !strings.Contains(string(data), "agent:x:1000") {
		t.Fatalf("stage not rebuilt after a change: %s", dir2)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("previous generation removed while it may be in use: %v", err)
	}
	os.Remove(filepath.Join(root, "etc/hosts"))
	st.next = time.Time{}
	dir3, _ := st.current()
	if _, err := os.Stat(filepath.Join(dir3, "hosts")); err == nil {
		t.Error("removed source still staged")
	}
	// Only keptEtcGens previous generations stay.
	for i := 0; i < keptEtcGens+2; i++ {
		future = future.Add(time.Minute)
		os.Chtimes(filepath.Join(root, "etc/passwd"), future, future)
		st.next = time.Time{}
		if _, err := st.current(); err != nil {
			t.Fatal(err)
		}
	}
	gens, _ := os.ReadDir(st.base)
	if len(gens) != keptEtcGens+1 {
		t.Errorf("%d generations on disk, want %d", len(gens), keptEtcGens+1)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("oldest generation not removed")
	}
}

func TestRemoveStaleEtcStages(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := filepath.Join(tmp, etcStagePrefix+"2147483646-123")
	mine := filepath.Join(tmp, etcStagePrefix+strconv.Itoa(os.Getpid())+"-456")
	other := filepath.Join(tmp, "agentbe-something-1")
	for _, d := range []string{dead, mine, other} {
		if err := os.MkdirAll(filepath.Join(d, "1"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	removeStaleEtcStages()
	if _, err := os.Stat(dead); err == nil {
		t.Error("stage of a dead process kept")
	}
	for _, d := range []string{mine, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed", d)
		}
	}
}

func TestBwrapArgvStagedEtc(t *testing.T) {
	l := bwrapLayout{bwrap: "/usr/bin/bwrap", sys: []sysMount{{path: "/usr"}}, etcDir: "/tmp/agentbe-etc-1-2/3"}
	argv := bwrapSetup(l, Spec{Shell: "/bin/sh", Command: "true", HostRoot: "/w", WorkRel: "."}, nil)
	if argIndex(argv, "--ro-bind", "/tmp/agentbe-etc-1-2/3", "/etc") < 0 {
		t.Fatalf("stage not bound at /etc: %v", argv)
	}
	if slices.Contains(argv, "--ro-bind-try") {
		t.Errorf("per-file /etc binds alongside the stage: %v", argv)
	}
}
