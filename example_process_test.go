package agentbe_test

import (
	"context"
	"fmt"
	"os"

	agentbe "github.com/agentbe/agent-backend"
)

// A background process: start it, write to it, read its output by
// sequence number (a reader that reconnects passes the last Seq it saw),
// stop it.
func ExampleProcess() {
	dir, _ := os.MkdirTemp("", "agentbe-example")
	defer os.RemoveAll(dir)
	b, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: dir, Isolation: agentbe.IsolationNone})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Destroy(context.Background())
	ctx := context.Background()

	p, err := b.StartProcess(ctx, "cat", agentbe.ProcessOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	p.Write([]byte("hello\n"))
	var last uint64
	done := fmt.Errorf("done")
	p.Follow(ctx, last, func(e agentbe.OutputEntry) error {
		fmt.Printf("%d %s %q\n", e.Seq, e.Stream, e.Data)
		last = e.Seq
		return done // a client going away; Follow(ctx, last, …) reads on
	})
	p.Stop(ctx)
	info, _ := p.Wait(ctx)
	fmt.Println(info.Running, info.Signal)
	// Output:
	// 1 stdout "hello\n"
	// false TERM
}
