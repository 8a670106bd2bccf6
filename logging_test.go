package agentbe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// ctLogged builds a backend of the given kind whose operations go to rec;
// for scope kinds, the scope is returned with the scope path it reports.
func ctLogged(t *testing.T, kind string, rec OpLogger, mode LogMode) (b Backend, scope string) {
	t.Helper()
	switch kind {
	case "local":
		return ctLocal(t, LocalConfig{Logger: rec, LogMode: mode}), ""
	case "memory":
		return ctMemory(t, MemoryConfig{Logger: rec, LogMode: mode}), ""
	case "local-scope": // inherits the parent's logger
		return ctScope(t, ctLocal(t, LocalConfig{Logger: rec, LogMode: mode}), "a"), "a"
	case "memory-scope":
		return ctScope(t, ctMemory(t, MemoryConfig{Logger: rec, LogMode: mode}), "a"), "a"
	case "local-nested-own-logger": // the parent logs nothing
		s := ctScope(t, ctLocal(t, LocalConfig{}), "a")
		n, err := s.Scope("b/c", ScopeOptions{Logger: rec, LogMode: mode})
		if err != nil {
			t.Fatal(err)
		}
		return n, "a/b/c"
	}
	t.Fatalf("unknown kind %s", kind)
	return nil, ""
}

var ctLogKinds = []string{"local", "memory", "local-scope", "memory-scope", "local-nested-own-logger"}

// ctRunAllOps performs every operation once, all successful except exec on
// memory kinds. The order is the order of ctAllOps.
func ctRunAllOps(t *testing.T, b Backend) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Write(ctx, "w.txt", []byte("data")))
	_, err := b.Read(ctx, "w.txt")
	must(err)
	rc, err := b.Open(ctx, "w.txt")
	must(err)
	rc.Close()
	w, err := b.Create(ctx, "c.txt")
	must(err)
	must(w.Close())
	_, err = b.ReadDir(ctx, ".")
	must(err)
	must(b.Mkdir(ctx, "d"))
	_, err = b.Exists(ctx, "w.txt")
	must(err)
	_, err = b.Stat(ctx, "w.txt")
	must(err)
	_, err = b.Lstat(ctx, "w.txt")
	must(err)
	must(b.Touch(ctx, "t.txt"))
	must(b.Rename(ctx, "t.txt", "r.txt"))
	must(b.Remove(ctx, "r.txt", RemoveOptions{}))
	_, err = b.RealPath(ctx, "w.txt")
	must(err)
	_, err = b.Exec(ctx, "echo out; echo err >&2", ExecOptions{})
	if Executes(b) {
		must(err)
	}
}

var ctAllOps = []string{"write", "read", "open", "create", "readdir", "mkdir", "exists", "stat", "lstat",
	"touch", "rename", "remove", "realpath", "exec"}

var ctModifyingOps = []string{"write", "create", "mkdir", "touch", "rename", "remove", "exec"}

// ctUserEntries drops the "mkdir" a scope's parent logs when the scope
// creates its own directory before its first write (an implicit operation
// of the parent, logged with the parent's scope field).
func ctUserEntries(entries []OpEntry, scope string) []OpEntry {
	var out []OpEntry
	for _, e := range entries {
		if e.Op == "mkdir" && e.Scope != scope {
			continue
		}
		out = append(out, e)
	}
	return out
}

func ctOpsOf(entries []OpEntry) []string {
	var ops []string
	for _, e := range entries {
		ops = append(ops, e.Op)
	}
	return ops
}

func TestLogModes(t *testing.T) {
	for _, kind := range ctLogKinds {
		for _, mode := range []LogMode{LogStandard, LogVerbose} {
			name := kind + map[LogMode]string{LogStandard: "/standard", LogVerbose: "/verbose"}[mode]
			t.Run(name, func(t *testing.T) {
				rec := &OpRecorder{}
				b, scope := ctLogged(t, kind, rec, mode)
				before := time.Now()
				ctRunAllOps(t, b)
				after := time.Now()
				// realpath, exec on Memory and rename's Path2 have tests
				// of their own (TestLogVerboseRealPath, TestLogMemoryExec,
				// TestLogRenamePath2).
				var entries []OpEntry
				for _, e := range ctUserEntries(rec.Entries(), scope) {
					if e.Op != "realpath" && (e.Op != "exec" || Executes(b)) {
						entries = append(entries, e)
					}
				}
				var want []string
				for _, op := range map[LogMode][]string{LogStandard: ctModifyingOps, LogVerbose: ctAllOps}[mode] {
					if op != "realpath" && (op != "exec" || Executes(b)) {
						want = append(want, op)
					}
				}
				if got := ctOpsOf(entries); !slices.Equal(got, want) {
					t.Errorf("logged ops %q, want %q", got, want)
				}
				for _, e := range entries {
					if e.Time.Before(before) || e.Time.After(after) || e.Duration < 0 {
						t.Errorf("%s: time %v duration %v outside the call", e.Op, e.Time, e.Duration)
					}
					if e.Scope != scope {
						t.Errorf("%s: Scope = %q, want %q", e.Op, e.Scope, scope)
					}
					wantOK := e.Op != "exec" || Executes(b)
					if e.Success != wantOK || (e.Err == nil) != wantOK {
						t.Errorf("%s: Success %v Err %v, want success=%v", e.Op, e.Success, e.Err, wantOK)
					}
					switch e.Op {
					case "exec":
						if e.Command != "echo out; echo err >&2" || e.Path != "" {
							t.Errorf("exec entry Command %q Path %q", e.Command, e.Path)
						}
					default:
						if e.Path == "" || e.Command != "" {
							t.Errorf("%s entry Path %q Command %q", e.Op, e.Path, e.Command)
						}
					}
				}
			})
		}
	}
}

// TestLogVerboseRealPath: verbose mode logs every operation, so RealPath
// (a read) is logged on every kind, as Scope already does.
func TestLogVerboseRealPath(t *testing.T) {
	for _, kind := range ctLogKinds {
		rec := &OpRecorder{}
		b, scope := ctLogged(t, kind, rec, LogVerbose)
		if err := b.Mkdir(context.Background(), "."); err != nil { // a scope's directory must exist
			t.Fatal(err)
		}
		if _, err := b.RealPath(context.Background(), "x"); err != nil {
			t.Fatal(err)
		}
		es := ctUserEntries(rec.Entries(), scope)[1:]
		if len(es) != 1 || es[0].Op != "realpath" || es[0].Path != "x" || !es[0].Success {
			t.Errorf("%s: RealPath logged %+v, want one realpath entry", kind, es)
		}
	}
}

// TestLogMemoryExec: exec is a modifying operation; an exec attempt on a
// Memory backend is logged (as a failure) like on a scope of one.
func TestLogMemoryExec(t *testing.T) {
	for _, kind := range []string{"memory", "memory-scope"} {
		rec := &OpRecorder{}
		b, scope := ctLogged(t, kind, rec, LogStandard)
		_, err := b.Exec(context.Background(), "ls", ExecOptions{})
		es := ctUserEntries(rec.Entries(), scope)
		if len(es) != 1 || es[0].Op != "exec" || es[0].Command != "ls" || es[0].Success || !errors.Is(es[0].Err, ErrNotImplemented) {
			t.Errorf("%s: Exec (%v) logged %+v, want one failed exec entry", kind, err, es)
		}
	}
}

// TestLogRenamePath2: OpEntry documents Path2 as rename's second path.
func TestLogRenamePath2(t *testing.T) {
	for _, kind := range ctLogKinds {
		rec := &OpRecorder{}
		b, scope := ctLogged(t, kind, rec, LogStandard)
		ctx := context.Background()
		if err := b.Write(ctx, "old", nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Rename(ctx, "old", "new"); err != nil {
			t.Fatal(err)
		}
		es := ctUserEntries(rec.Entries(), scope)
		if len(es) != 2 || es[1].Op != "rename" || es[1].Path != "old" || es[1].Path2 != "new" {
			t.Errorf("%s: rename logged %+v, want Path old, Path2 new", kind, es[len(es)-1])
		}
	}
}

func TestLogExecOutput(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"local", "local-scope", "local-nested-own-logger"} {
		t.Run(kind, func(t *testing.T) {
			rec := &OpRecorder{}
			b, scope := ctLogged(t, kind, rec, LogStandard)
			if _, err := b.Exec(ctx, "echo out; echo err >&2", ExecOptions{}); err != nil {
				t.Fatal(err)
			}
			_, ferr := b.Exec(ctx, "echo partial; echo boom >&2; exit 3", ExecOptions{})
			var sb strings.Builder
			if _, err := b.Exec(ctx, "echo streamed", ExecOptions{Stdout: &sb}); err != nil {
				t.Fatal(err)
			}
			es := ctUserEntries(rec.Entries(), scope)
			if len(es) != 3 {
				t.Fatalf("got %d entries, want 3: %+v", len(es), es)
			}
			ok, fail, streamed := es[0], es[1], es[2]
			if !ok.Success || ok.Stdout != "out\n" || ok.Stderr != "err\n" || ok.Scope != scope {
				t.Errorf("success entry: Success %v Stdout %q Stderr %q Scope %q; want out/err", ok.Success, ok.Stdout, ok.Stderr, ok.Scope)
			}
			var xe *ExitError
			if fail.Success || !errors.As(fail.Err, &xe) || xe.ExitCode != 3 || !errors.Is(fail.Err, ferr) {
				t.Errorf("failure entry: Success %v Err %v, want the *ExitError (code 3) returned", fail.Success, fail.Err)
			}
			if fail.Stderr != "boom\n" || fail.Command != "echo partial; echo boom >&2; exit 3" {
				t.Errorf("failure entry: Stderr %q Command %q", fail.Stderr, fail.Command)
			}
			if streamed.Stdout != "" || !streamed.Success {
				t.Errorf("streamed entry Stdout %q (should not be collected)", streamed.Stdout)
			}
			if sb.String() != "streamed\n" {
				t.Errorf("streamed output %q", sb.String())
			}
		})
	}
}

func TestLogFailures(t *testing.T) {
	ctx := context.Background()
	for _, kind := range ctLogKinds {
		t.Run(kind, func(t *testing.T) {
			rec := &OpRecorder{}
			b, scope := ctLogged(t, kind, rec, LogVerbose)
			_, rerr := b.Read(ctx, "missing")
			werr := b.Write(ctx, "../escape", []byte("x"))
			derr := b.Remove(ctx, "missing", RemoveOptions{})
			es := ctUserEntries(rec.Entries(), scope)
			want := []struct {
				op  string
				err error
				is  error
			}{
				{"read", rerr, fs.ErrNotExist},
				{"write", werr, ErrPathEscape},
				{"remove", derr, fs.ErrNotExist},
			}
			if len(es) != len(want) {
				t.Fatalf("entries %q, want %d", ctOpsOf(es), len(want))
			}
			for i, w := range want {
				e := es[i]
				if e.Op != w.op || e.Success || e.Err == nil || !errors.Is(e.Err, w.is) {
					t.Errorf("entry %d: op %s success %v err %v; want failed %s wrapping %v", i, e.Op, e.Success, e.Err, w.op, w.is)
				}
				if e.Err != nil && w.err != nil && e.Err.Error() != w.err.Error() {
					t.Errorf("entry %d: logged %q, returned %q", i, e.Err, w.err)
				}
			}
		})
	}
}

// TestLogCreateAbandoned: a writer from Create whose ctx is cancelled
// before Close commits nothing; the entry is logged when Close reports the
// outcome (not when the writer is handed out), as a failure.
func TestLogCreateAbandoned(t *testing.T) {
	ctx := context.Background()
	for _, kind := range ctLogKinds {
		rec := &OpRecorder{}
		b, scope := ctLogged(t, kind, rec, LogStandard)
		cctx, cancel := context.WithCancel(ctx)
		w, err := b.Create(cctx, "abandoned.txt")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(ctUserEntries(rec.Entries(), scope)); n != 0 {
			t.Errorf("%s: %d entries logged before Close", kind, n)
		}
		io.WriteString(w, "x")
		cancel()
		cerr := w.Close()
		if !errors.Is(cerr, context.Canceled) {
			t.Errorf("%s: Close = %v, want context.Canceled", kind, cerr)
		}
		es := ctUserEntries(rec.Entries(), scope)
		if len(es) != 1 || es[0].Op != "create" || es[0].Success || !errors.Is(es[0].Err, context.Canceled) {
			t.Errorf("%s: logged %+v, want one failed create entry", kind, es)
		}
		if ok, _ := b.Exists(ctx, "abandoned.txt"); ok {
			t.Errorf("%s: abandoned content committed", kind)
		}
	}
}

// TestCreateCloseErrorIsAgentbeError: every error a backend returns is an
// *Error (code, op, path), including the one from closing a Create writer.
func TestCreateCloseErrorIsAgentbeError(t *testing.T) {
	for _, kind := range ctLogKinds {
		b, _ := ctLogged(t, kind, nil, LogStandard)
		cctx, cancel := context.WithCancel(context.Background())
		w, err := b.Create(cctx, "f.txt")
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		err = w.Close()
		var be *Error
		if !errors.As(err, &be) || be.Op != "create" || be.Path != "f.txt" || !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Close = %#v, want an *Error for create \"f.txt\" wrapping context.Canceled", kind, err)
		}
	}
}

// TestLogScopeLoggerSeparation: a scope with its own logger sends its
// operations there only; the parent's logger sees only the parent's.
func TestLogScopeLoggerSeparation(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"local", "memory"} {
		parentRec, scopeRec := &OpRecorder{}, &OpRecorder{}
		var b Backend
		if kind == "local" {
			b = ctLocal(t, LocalConfig{Logger: parentRec})
		} else {
			b = ctMemory(t, MemoryConfig{Logger: parentRec})
		}
		s, err := b.Scope("s", ScopeOptions{Logger: scopeRec, LogMode: LogVerbose})
		if err != nil {
			t.Fatal(err)
		}
		s.Write(ctx, "in-scope", []byte("1"))
		s.Read(ctx, "in-scope")
		b.Write(ctx, "in-parent", []byte("2"))
		b.Read(ctx, "in-parent")  // standard mode: not logged
		inh := ctScope(t, s, "n") // inherits the scope's logger and mode
		inh.Stat(ctx, ".")

		var parentOps []string
		for _, e := range parentRec.Entries() {
			if e.Op == "mkdir" && e.Path == "s" {
				continue // the scope creating its directory (see ctUserEntries)
			}
			parentOps = append(parentOps, e.Op)
		}
		if got := parentOps; !slices.Equal(got, []string{"write"}) {
			t.Errorf("%s: parent logger got %q", kind, got)
		}
		sc := scopeRec.Entries()
		if got := ctOpsOf(sc); !slices.Equal(got, []string{"write", "read", "stat"}) {
			t.Errorf("%s: scope logger got %q", kind, got)
		}
		if len(sc) == 3 && (sc[0].Scope != "s" || sc[2].Scope != "s/n" || sc[0].Path != "in-scope") {
			t.Errorf("%s: scope entries %+v", kind, sc)
		}
	}
}

func TestLogNoLogger(t *testing.T) {
	// No logger configured: operations work and nothing panics.
	for _, b := range []Backend{ctLocal(t, LocalConfig{}), ctMemory(t, MemoryConfig{})} {
		ctRunAllOps(t, b)
	}
}

func TestOpRecorderConcurrent(t *testing.T) {
	rec := &OpRecorder{}
	m := ctMemory(t, MemoryConfig{Logger: rec, LogMode: LogVerbose})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				p := string(rune('a'+i)) + "/" + string(rune('a'+j%26))
				m.Write(context.Background(), p, nil)
				m.Read(context.Background(), p)
				_ = rec.Entries()
			}
		}()
	}
	wg.Wait()
	if n := len(rec.Entries()); n != 8*50*2 {
		t.Errorf("recorded %d entries, want %d", n, 8*50*2)
	}
	es := rec.Entries()
	es[0].Op = "mutated"
	if rec.Entries()[0].Op == "mutated" {
		t.Error("Entries returned the internal slice")
	}
}

func ctSlogLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	dec := json.NewDecoder(buf)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
}

func TestSlogLogger(t *testing.T) {
	var buf bytes.Buffer
	lg := SlogLogger{Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	lg.LogOp(OpEntry{Time: at, Op: "write", Path: "a.txt", Success: true, Duration: 1500 * time.Microsecond})
	lg.LogOp(OpEntry{Time: at, Op: "exec", Command: "make", Scope: "users/u1", Stdout: "o", Stderr: "e",
		Duration: time.Second, Err: errors.New("command exited with code 2: e")})
	lg.LogOp(OpEntry{Op: "rename", Path: "a", Path2: "b", Success: true})
	lines := ctSlogLines(t, &buf)
	want := []map[string]any{
		{"level": "INFO", "msg": "agentbe operation", "op": "write", "path": "a.txt", "success": true,
			"duration": float64(1500 * time.Microsecond)},
		{"level": "WARN", "msg": "agentbe operation", "op": "exec", "command": "make", "scope": "users/u1",
			"stdout": "o", "stderr": "e", "success": false, "duration": float64(time.Second),
			"error": "command exited with code 2: e"},
		{"level": "INFO", "op": "rename", "path": "a", "path2": "b", "success": true},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines: %v", len(lines), lines)
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s = %v (%T), want %v", i, k, lines[i][k], lines[i][k], v)
			}
		}
	}
	// Attributes that do not apply are left out.
	for _, k := range []string{"command", "stdout", "stderr", "error", "scope", "path2"} {
		if _, ok := lines[0][k]; ok {
			t.Errorf("write line has attribute %q: %v", k, lines[0])
		}
	}
}

func TestSlogLoggerFromBackend(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	h := slog.NewJSONHandler(&ctLockedWriter{w: &buf, mu: &mu}, nil)
	l := ctLocal(t, LocalConfig{Logger: SlogLogger{Logger: slog.New(h)}})
	s := ctScope(t, l, "tenant")
	ctx := context.Background()
	s.Write(ctx, "f.txt", []byte("x"))
	s.Exec(ctx, "exit 1", ExecOptions{})
	var lines []map[string]any
	for _, l := range ctSlogLines(t, &buf) {
		if l["op"] != "mkdir" { // the scope creating its directory
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("lines: %v", lines)
	}
	if lines[0]["op"] != "write" || lines[0]["path"] != "f.txt" || lines[0]["scope"] != "tenant" || lines[0]["level"] != "INFO" {
		t.Errorf("write line %v", lines[0])
	}
	if lines[1]["op"] != "exec" || lines[1]["command"] != "exit 1" || lines[1]["level"] != "WARN" || lines[1]["error"] == nil {
		t.Errorf("exec line %v", lines[1])
	}
}

func TestSlogLoggerDefault(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, nil)))
	defer slog.SetDefault(prev)
	SlogLogger{}.LogOp(OpEntry{Op: "mkdir", Path: "d", Success: true})
	lines := ctSlogLines(t, &buf)
	if len(lines) != 1 || lines[0]["op"] != "mkdir" {
		t.Errorf("SlogLogger with nil Logger did not use slog.Default: %v", lines)
	}
}

type ctLockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *ctLockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
