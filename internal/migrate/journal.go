package migrate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// migrationJournal is the migration's record on local disk: one JSON
// object per line, appended. A re-run reads it to skip the files an earlier
// run copied and verified (their source and copy unchanged since), and to
// know which tenants it started (whose destination content it may then
// replace). Without a file it records nothing.
type migrationJournal struct {
	mu      sync.Mutex
	f       *os.File
	tenants map[string]*journalTenant
}

// journalTenant is what the journal knows of one move.
type journalTenant struct {
	begun, done, deleted bool
	doneRec              journalRecord            // the "done" record
	files                map[string]journalRecord // by path in the scope
}

// journalRecord is one line. Op is "begin" (the move started: its
// destination may hold our copies from then on), "file" (a file copied and
// verified), "done" (the tenant copied and verified), "deleted" (its
// source removed).
type journalRecord struct {
	Op   string `json:"op"`
	From string `json:"from"`
	To   string `json:"to"`
	Key  string `json:"key"`
	// For "file": the path in the scope, the source's size, modification
	// time (Unix seconds) and mode, the copy's size and modification time,
	// and the content's SHA-256.
	Path   string `json:"path,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Mtime  int64  `json:"mtime,omitempty"`
	Mode   uint32 `json:"mode,omitempty"`
	DSize  int64  `json:"dsize,omitempty"`
	DMtime int64  `json:"dmtime,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// For "done": the source's regular files, all its entries (the scope
	// itself included), and the entries that could not be copied.
	Files     int `json:"files,omitempty"`
	Entries   int `json:"entries,omitempty"`
	Unmovable int `json:"unmovable,omitempty"`
}

// ErrJournalBusy is returned by Open when another migration holds the
// journal file.
var ErrJournalBusy = errors.New("agentbe: the migration journal is in use by another migration")

func moveID(m Move) string { return m.From + "\x00" + m.To + "\x00" + m.Key }

// openJournal reads the journal at name (creating it, mode 0600) and keeps
// it open for appending. A last line cut short by a crash is dropped; any
// other line that does not parse is an error. "" is a journal that records
// nothing.
func openJournal(name string) (*migrationJournal, error) {
	j := &migrationJournal{tenants: map[string]*journalTenant{}}
	if name == "" {
		return j, nil
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("migration journal: %w", err)
	}
	if err := lockJournal(f); err != nil {
		f.Close()
		return nil, err
	}
	good, err := j.load(f)
	if err == nil {
		// Drop a torn last line so that the next record starts a line.
		if err = f.Truncate(good); err == nil {
			_, err = f.Seek(good, io.SeekStart)
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("migration journal %s: %w", name, err)
	}
	j.f = f
	return j, nil
}

// load replays the records of r and returns the length of its complete
// lines.
func (j *migrationJournal) load(r io.Reader) (int64, error) {
	br := bufio.NewReader(r)
	var good int64
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err == io.EOF {
			return good, nil // a last line without its newline was cut short
		}
		if err != nil {
			return good, err
		}
		var rec journalRecord
		if len(bytes.TrimSpace(b)) > 0 {
			if err := json.Unmarshal(b, &rec); err != nil {
				return good, fmt.Errorf("line %d: %w", line, err)
			}
			j.apply(rec)
		}
		good += int64(len(b))
	}
}

func (j *migrationJournal) apply(rec journalRecord) {
	id := moveID(Move{Key: rec.Key, From: rec.From, To: rec.To})
	t := j.tenants[id]
	if t == nil {
		t = &journalTenant{files: map[string]journalRecord{}}
		j.tenants[id] = t
	}
	switch rec.Op {
	case "begin":
		t.begun = true
	case "file":
		t.begun = true
		t.files[rec.Path] = rec
	case "done":
		t.begun, t.done, t.doneRec = true, true, rec
	case "deleted":
		t.begun, t.done, t.deleted = true, true, true
	}
}

// tenant returns a copy of what the journal knows of m.
func (j *migrationJournal) tenant(m Move) journalTenant {
	j.mu.Lock()
	defer j.mu.Unlock()
	t := j.tenants[moveID(m)]
	if t == nil {
		return journalTenant{}
	}
	return *t // files is shared, read under j.mu only by file
}

// file returns the record of path in m, if any.
func (j *migrationJournal) file(m Move, path string) (journalRecord, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if t := j.tenants[moveID(m)]; t != nil {
		rec, ok := t.files[path]
		return rec, ok
	}
	return journalRecord{}, false
}

// record appends rec (and applies it); sync flushes the file to disk, for
// the records a re-run relies on (begin, done, deleted): a lost file record
// only costs a re-run hashing that file again.
func (j *migrationJournal) record(rec journalRecord, sync bool) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.apply(rec)
	if j.f == nil {
		return nil
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("migration journal: %w", err)
	}
	if sync {
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("migration journal: %w", err)
		}
	}
	return nil
}

func (j *migrationJournal) close() error {
	if j.f == nil {
		return nil
	}
	err := j.f.Sync()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	return err
}
