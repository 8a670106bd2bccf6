package agentbe_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"golang.org/x/crypto/ssh"

	agentbe "github.com/agentbe/agent-backend"
)

// A Remote talks to `agent-backend daemon` over the network, with the
// daemon's host key pinned (HostKeyCallback is required; see also
// HostKeyFingerprint and HostKeyFromKnownHosts).
func ExampleNewRemote() {
	ctx := context.Background()
	pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(os.Getenv("AGENTBE_HOST_KEY")))
	if err != nil {
		log.Fatal(err)
	}
	r, err := agentbe.NewRemote(agentbe.RemoteConfig{
		RootDir:          "/var/workspace",
		Host:             "agentbe-0.agentbe.default.svc",
		Token:            os.Getenv("AGENTBE_TOKEN"),
		HostKeyCallback:  ssh.FixedHostKey(pub),
		OperationTimeout: 30 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Destroy(ctx)
	r.OnStatusChange(func(old, new agentbe.Status) { log.Printf("daemon link: %s → %s", old, new) })

	if err := r.Write(ctx, "notes/todo.txt", []byte("ship it\n")); err != nil { // connects lazily
		log.Fatal(err)
	}
	out, err := r.Exec(ctx, "wc -l notes/todo.txt", agentbe.ExecOptions{})
	fmt.Print(string(out), err)
}

// A Pool keeps one backend per tenant key; with Shards it spreads the keys
// over many daemons by rendezvous hashing.
func ExampleNewPool() {
	ctx := context.Background()
	pool, err := agentbe.NewPool(agentbe.PoolConfig[agentbe.MemoryConfig]{
		New: func(ctx context.Context, cfg agentbe.MemoryConfig) (agentbe.Backend, error) {
			return agentbe.NewMemory(cfg)
		},
		IdleTimeout: time.Minute,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close(ctx)

	for _, user := range []string{"alice", "bob", "alice"} {
		err := pool.With(ctx, user, nil, func(b agentbe.Backend) error {
			return b.Write(ctx, "visits/"+fmt.Sprint(time.Now().UnixNano()), nil)
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("%+v\n", pool.Stats())
	// Output: {Total:2 Active:0 Idle:2}
}
