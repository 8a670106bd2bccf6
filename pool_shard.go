package agentbe

import (
	"errors"
	"fmt"
	"hash/fnv"
	"time"
)

// ShardFor returns the shard of shards that a Pool with these Shards
// serves key from (rendezvous hashing; see PoolConfig.Shards), or "" when
// shards is empty. It is the placement PlanMigration compares.
func ShardFor(key string, shards []string) string {
	return rendezvous(key, shards)
}

// rendezvous picks the node of highest weight for key (highest-random-
// weight hashing): every key has its own ranking of the nodes, so removing
// a node moves only the keys it owned, each to its second choice, and
// adding one takes from each other node only the keys it now wins.
func rendezvous(key string, nodes []string) string {
	best, bestW := "", uint64(0)
	for _, n := range nodes {
		w := hrwWeight(key, n)
		if best == "" || w > bestW || w == bestW && n < best {
			best, bestW = n, w
		}
	}
	return best
}

// hrwWeight hashes node and key (FNV-1a, then the splitmix64 finalizer so
// that close inputs get unrelated weights).
func hrwWeight(key, node string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(node))
	h.Write([]byte{0})
	h.Write([]byte(key))
	z := h.Sum64()
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// shardDown is a shard out of service until a time, and why.
type shardDown struct {
	until time.Time
	cause error
}

// errBackendLost is why a failover pool takes the shard of a pooled
// backend that became unusable out of the rendezvous.
var errBackendLost = errors.New("a pooled backend of the shard lost its connection")

// ShardError is the cause of a Pool's Acquire that failed because the
// key's shard could not serve it. Acquire returns it inside an *Error whose
// Code is the cause's (CONNECTION_CLOSED when the cause has none; a full
// daemon keeps DAEMON_FULL).
type ShardError struct {
	Key   string // the pool key
	Shard string // the shard that serves it
	// Down reports that the shard is out of service: it could not be
	// reached (or refused the connection) just now or less than ShardRetry
	// ago. errors.Is(err, ErrConnectionClosed) holds then. A full daemon is
	// not down.
	Down bool
	// Moving reports that PoolConfig.NextShards gives the key another
	// shard: the pool refuses it while its files are moved.
	// errors.Is(err, ErrConnectionClosed) holds then too.
	Moving bool
	Err    error // why: what building the key's backend returned, or ErrTenantMoving
}

// ErrTenantMoving is the cause of a ShardError with Moving set.
var ErrTenantMoving = errors.New("the tenant is moving")

func (e *ShardError) Error() string {
	state := ""
	switch {
	case e.Down:
		state = " is down"
	case e.Moving:
		state = " is handing it over"
	}
	msg := fmt.Sprintf("key %q: shard %q%s", e.Key, e.Shard, state)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *ShardError) Unwrap() error { return e.Err }

// Is makes the error of a down shard, or of a moving key, match
// ErrConnectionClosed whatever its cause.
func (e *ShardError) Is(target error) bool {
	return (e.Down || e.Moving) && target == ErrConnectionClosed
}

// shardFailure is the error of an Acquire that shard could not serve.
func shardFailure(key, shard string, cause error, down bool) error {
	code := CodeOf(cause)
	if code == "" {
		code = CodeConnectionClosed
	}
	return &Error{Code: code, Op: "acquire", Err: &ShardError{Key: key, Shard: shard, Down: down, Err: cause}}
}
