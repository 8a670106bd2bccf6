package agentbe_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"strings"

	agentbe "github.com/agentbe/agent-backend"
)

// workspace returns a fresh directory for an example and a func removing it.
func workspace() (string, func()) {
	dir, err := os.MkdirTemp("", "agentbe-example-")
	if err != nil {
		log.Fatal(err)
	}
	return dir, func() { os.RemoveAll(dir) }
}

func ExampleNewLocal() {
	dir, cleanup := workspace()
	defer cleanup()
	ctx := context.Background()

	b, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Destroy(ctx)

	// Parent directories are created; the write is atomic.
	if err := b.Write(ctx, "notes/todo.txt", []byte("ship it\n")); err != nil {
		log.Fatal(err)
	}
	// An absolute path outside the root is taken as relative to it.
	data, err := b.Read(ctx, "/notes/todo.txt")
	if err != nil {
		log.Fatal(err)
	}
	names, _ := b.ReadDir(ctx, "notes")
	fmt.Printf("%q %v %v\n", data, names, b.Status())
	// Output: "ship it\n" [todo.txt] connected
}

func ExampleLocal_Scope() {
	dir, cleanup := workspace()
	defer cleanup()
	ctx := context.Background()

	b, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Destroy(ctx)

	// One scope per tenant: each sees only its own directory.
	alice, err := b.Scope("users/alice", agentbe.ScopeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	if err := alice.Write(ctx, "/profile.txt", []byte("alice")); err != nil {
		log.Fatal(err)
	}
	data, _ := b.Read(ctx, "users/alice/profile.txt")
	fmt.Println(string(data))

	_, err = alice.Read(ctx, "../bob/profile.txt")
	fmt.Println(errors.Is(err, agentbe.ErrPathEscape))

	// Destroying a scope leaves its parent (and the files) alone.
	alice.Destroy(ctx)
	fmt.Println(alice.Status(), b.Status())
	// Output:
	// alice
	// true
	// destroyed connected
}

func ExampleNewMemory() {
	ctx := context.Background()
	m, err := agentbe.NewMemory(agentbe.MemoryConfig{
		Initial: map[string][]byte{
			"config/app.json": []byte(`{"debug":true}`),
			"config/db.json":  []byte(`{}`),
			"README":          []byte("hi"),
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Destroy(ctx)

	root, _ := m.ReadDir(ctx, "/")
	config, _ := m.ReadDir(ctx, "config")
	fmt.Println(root, config)

	_, err = m.Read(ctx, "config/missing.json")
	fmt.Println(agentbe.CodeOf(err), errors.Is(err, fs.ErrNotExist))

	_, err = m.Exec(ctx, "ls", agentbe.ExecOptions{})
	fmt.Println(errors.Is(err, agentbe.ErrNotImplemented))
	// Output:
	// [README config] [app.json db.json]
	// KEY_NOT_FOUND true
	// true
}

func ExampleLocal_Exec() {
	dir, cleanup := workspace()
	defer cleanup()
	ctx := context.Background()

	b, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Destroy(ctx)

	out, err := b.Exec(ctx, `echo "hello $NAME"`, agentbe.ExecOptions{
		Env: map[string]string{"NAME": "agent"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(out))

	// A non-zero exit is an error carrying the exit code and stderr.
	_, err = b.Exec(ctx, "echo oops >&2; exit 3", agentbe.ExecOptions{})
	var xe *agentbe.ExitError
	if errors.As(err, &xe) {
		fmt.Println(xe.ExitCode, strings.TrimSpace(string(xe.Stderr)), agentbe.CodeOf(err))
	}
	// Output:
	// hello agent
	// 3 oops EXEC_FAILED
}

func ExampleFS() {
	ctx := context.Background()
	m, err := agentbe.NewMemory(agentbe.MemoryConfig{Initial: map[string][]byte{
		"site/index.html":     []byte("<h1>hi</h1>"),
		"site/css/main.css":   []byte("body{}"),
		"site/img/logo.svg":   []byte("<svg/>"),
		"private/secrets.txt": []byte("nope"),
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Destroy(ctx)

	// Serve or walk only a scope of the backend: e.g.
	// http.Handle("/", http.FileServer(http.FS(agentbe.FS(site)))).
	site, _ := m.Scope("site", agentbe.ScopeOptions{})
	err = fs.WalkDir(agentbe.FS(site), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fmt.Println(p, d.IsDir())
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// . true
	// css true
	// css/main.css false
	// img true
	// img/logo.svg false
	// index.html false
}

func Example_pathEscape() {
	dir, cleanup := workspace()
	defer cleanup()
	ctx := context.Background()

	b, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Destroy(ctx)

	for _, p := range []string{"../etc/passwd", "a/b/../../../../etc", "/etc/passwd"} {
		_, err := b.Read(ctx, p)
		switch {
		case errors.Is(err, agentbe.ErrPathEscape):
			fmt.Printf("%s: rejected (%s)\n", p, agentbe.CodeOf(err))
		case errors.Is(err, fs.ErrNotExist):
			// "/etc/passwd" means <workspace>/etc/passwd.
			fmt.Printf("%s: not in the workspace\n", p)
		}
	}
	// Output:
	// ../etc/passwd: rejected (PATH_ESCAPE_ATTEMPT)
	// a/b/../../../../etc: rejected (PATH_ESCAPE_ATTEMPT)
	// /etc/passwd: not in the workspace
}

// printLogger is an OpLogger that prints each operation.
type printLogger struct{}

func (printLogger) LogOp(e agentbe.OpEntry) { fmt.Println(e.Op, e.Path, e.Success) }

func ExampleOpLogger() {
	ctx := context.Background()
	m, _ := agentbe.NewMemory(agentbe.MemoryConfig{Logger: printLogger{}, LogMode: agentbe.LogStandard})
	defer m.Destroy(ctx)

	m.Write(ctx, "a.txt", []byte("x"))
	m.Read(ctx, "a.txt") // reads are logged in LogVerbose mode only
	m.Remove(ctx, "missing", agentbe.RemoveOptions{})
	// Output:
	// write a.txt true
	// remove missing false
}
