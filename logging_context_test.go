package agentbe_test

import (
	"context"
	"sync"
	"testing"

	agentbe "github.com/agentbe/agent-backend"
)

type ctxKey struct{}

// ctxLogger records each entry with the value ctxKey had in its context.
type ctxLogger struct {
	mu   sync.Mutex
	seen map[string]string // op -> context value
	flat int               // LogOp calls (must stay 0)
}

func (l *ctxLogger) LogOp(agentbe.OpEntry) {
	l.mu.Lock()
	l.flat++
	l.mu.Unlock()
}

func (l *ctxLogger) LogOpContext(ctx context.Context, e agentbe.OpEntry) {
	v, _ := ctx.Value(ctxKey{}).(string)
	l.mu.Lock()
	l.seen[e.Op+" "+e.Scope] = v
	l.mu.Unlock()
}

// TestLogOpContext checks that a ContextOpLogger gets each operation's own
// context, on a Local, its scope and a Memory, for file operations and
// exec.
func TestLogOpContext(t *testing.T) {
	lg := &ctxLogger{seen: map[string]string{}}
	local, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: t.TempDir(), Logger: lg, Isolation: agentbe.IsolationSoftware})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Destroy(context.Background())
	mem, err := agentbe.NewMemory(agentbe.MemoryConfig{Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Destroy(context.Background())
	sc, err := local.Scope("sub", agentbe.ScopeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := func(v string) context.Context { return context.WithValue(context.Background(), ctxKey{}, v) }
	if err := local.Write(ctx("w1"), "a.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := local.Exec(ctx("e1"), "true", agentbe.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := local.Rename(ctx("r1"), "a.txt", "b.txt"); err != nil {
		t.Fatal(err)
	}
	if err := sc.Write(ctx("w2"), "c.txt", []byte("y")); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Exec(ctx("e2"), "true", agentbe.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := mem.Mkdir(ctx("m1"), "d"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"write ": "w1", "exec ": "e1", "rename ": "r1", "write sub": "w2", "exec sub": "e2", "mkdir ": "m1"}
	lg.mu.Lock()
	defer lg.mu.Unlock()
	for k, v := range want {
		if lg.seen[k] != v {
			t.Errorf("%q logged with context value %q, want %q (all: %v)", k, lg.seen[k], v, lg.seen)
		}
	}
	if lg.flat != 0 {
		t.Errorf("LogOp called %d times for a ContextOpLogger", lg.flat)
	}
}
