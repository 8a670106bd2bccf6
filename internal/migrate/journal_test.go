package migrate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMigrationJournal: records survive a reopen; a last line cut short by
// a crash is dropped (and the next record starts a line of its own); a
// damaged line elsewhere is an error; a journal in use is refused.
func TestMigrationJournal(t *testing.T) {
	name := filepath.Join(t.TempDir(), "j")
	m := Move{Key: "alice", From: "a:1", To: "b:1"}
	j, err := openJournal(name)
	mustOK(t, err)
	mustOK(t, j.record(journalRecord{Op: "begin", From: m.From, To: m.To, Key: m.Key}, true))
	mustOK(t, j.record(journalRecord{Op: "file", From: m.From, To: m.To, Key: m.Key, Path: "f", Size: 3, SHA256: "abc"}, false))
	if _, err := openJournal(name); !errors.Is(err, ErrJournalBusy) {
		t.Errorf("second open: %v", err)
	}
	mustOK(t, j.close())

	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	mustOK(t, err)
	f.WriteString(`{"op":"file","from":"a:1","to":"b:1","key":"alice","pa`)
	f.Close()
	j, err = openJournal(name)
	mustOK(t, err)
	if jt := j.tenant(m); !jt.begun || jt.done {
		t.Errorf("tenant %+v", jt)
	}
	if rec, ok := j.file(m, "f"); !ok || rec.SHA256 != "abc" {
		t.Errorf("file record %+v %v", rec, ok)
	}
	mustOK(t, j.record(journalRecord{Op: "done", From: m.From, To: m.To, Key: m.Key}, true))
	mustOK(t, j.close())
	j, err = openJournal(name)
	mustOK(t, err)
	if jt := j.tenant(m); !jt.done {
		t.Errorf("done lost after a torn line: %+v", jt)
	}
	if other := j.tenant(Move{Key: "alice", From: "b:1", To: "a:1"}); other.begun {
		t.Error("the reverse move shares the record")
	}
	mustOK(t, j.close())

	b, _ := os.ReadFile(name)
	lines := strings.Split(string(b), "\n")
	lines[1] = "not json"
	mustOK(t, os.WriteFile(name, []byte(strings.Join(lines, "\n")), 0o600))
	if _, err := openJournal(name); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("damaged journal: %v", err)
	}
	if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("journal mode: %v %v", fi, err)
	}
}

// TestRelativeTo: link targets made relative.
func TestRelativeTo(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{".", "a/b", "a/b"},
		{"a", "a/b", "b"},
		{"a/b", "a/c", "../c"},
		{"a/b/c", "x", "../../../x"},
		{"a", "a", "."},
		{"a/b", ".", "../.."},
	} {
		if got := relativeTo(tc.from, tc.to); got != tc.want {
			t.Errorf("relativeTo(%q, %q) = %q, want %q", tc.from, tc.to, got, tc.want)
		}
	}
	if got := linkTarget("t/alice/l", "/t/alice/x"); got != "x" {
		t.Errorf("absolute target: %q", got)
	}
	if got := linkTarget("t/alice/l", "./x/../y"); got != "y" {
		t.Errorf("relative target: %q", got)
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
