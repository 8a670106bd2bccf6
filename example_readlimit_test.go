package agentbe_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"

	agentbe "github.com/agentbe/agent-backend"
)

// Whole-file reads are bounded by MaxReadBytes (64 MiB when zero); a larger
// file fails before anything is allocated for it, and Open still streams it.
func ExampleLocalConfig_maxReadBytes() {
	dir, cleanup := workspace()
	defer cleanup()
	ctx := context.Background()

	b, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: dir, MaxReadBytes: 1 << 10, Isolation: agentbe.IsolationNone})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Destroy(ctx)
	if err := b.Write(ctx, "big.log", make([]byte, 4<<10)); err != nil {
		log.Fatal(err)
	}

	_, err = b.Read(ctx, "big.log")
	fmt.Println(errors.Is(err, agentbe.ErrTooLarge))
	fmt.Println(err)

	rc, err := b.Open(ctx, "big.log")
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	n, _ := io.Copy(io.Discard, rc)
	fmt.Println(n, "bytes streamed")
	// Output:
	// true
	// agentbe: read "big.log": file of 4096 bytes exceeds the read limit of 1024 bytes (MaxReadBytes); use Open to stream it
	// 4096 bytes streamed
}
