//go:build !linux

package agentbe

import "os"

// feedPipe is pipeWith (the plain-pipe version is Linux-only, as bwrap is).
func feedPipe(data []byte) (*os.File, error) { return pipeWith(data) }
