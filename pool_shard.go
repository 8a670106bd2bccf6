package agentbe

import "hash/fnv"

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
