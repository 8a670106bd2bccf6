package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStartRemovesStaleTemps: at start the daemon removes, in the
// background, the temporary files of atomic writes killed mid-way (old
// ones of our exact naming only) and logs how many.
func TestStartRemovesStaleTemps(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-time.Hour)
	write := func(name string, mtime time.Time) string {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := write("sub/.big.bin.00a1b2c3d4e5f.tmp", old)
	fresh := write(".big.bin.0zzzzzzzzzzzz.tmp", time.Now())
	mine := write(".big.bin.1.tmp", old)
	d := startDaemon(t, Config{RootDir: root, DisableSSHWS: true})
	<-d.sweepDone
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file kept: %v", err)
	}
	for _, p := range []string{fresh, mine} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	if !strings.Contains(d.log.String(), `level=INFO msg="daemon: removed stale temporary files" removed=1 `) {
		t.Errorf("log:\n%s", d.log.String())
	}
}
