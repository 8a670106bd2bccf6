//go:build linux

package daemon

import (
	"fmt"
	"testing"
)

// TestProcessLogsSlowReaderBounded: a tenant follows the logs of its
// process that writes 200 MB and never reads the stream: the daemon keeps
// no more than the process's bounded output ring for it (its heap grows by
// a bounded amount, far below the output), and the process runs to its
// end.
func TestProcessLogsSlowReaderBounded(t *testing.T) {
	d := startTenantDaemon(t, Config{DisableSSHWS: true}, `{}`)
	const total = 200 << 20
	id := d.procStart(t, aliceTok, fmt.Sprintf(`{"command":"head","args":["-c","%d","/dev/urandom"]}`, total))
	conn, resp, _ := rawGet(t, d, aliceTok, "/v1/processes/"+id+"/logs?follow=true", 4096)
	if resp.StatusCode != 200 {
		t.Fatalf("follow: %d", resp.StatusCode)
	}
	before := heapInUse()
	d.procWait(t, aliceTok, id)
	d.healthy(t)
	after := heapInUse()
	grown := int64(after) - int64(before)
	t.Logf("output %d MiB; heap in use %d → %d MiB", total>>20, before>>20, after>>20)
	if grown > 32<<20 {
		t.Errorf("the daemon's heap grew by %d MiB for a follower that reads nothing", grown>>20)
	}
	conn.Close()
}
