package wsnet

import (
	"bufio"
	"bytes"
	"net"
	"time"
)

func newReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// nopConn swallows writes (pongs, close replies) in the fuzz target.
type nopConn struct{ net.Conn }

func (nopConn) Write(p []byte) (int, error)      { return len(p), nil }
func (nopConn) SetWriteDeadline(time.Time) error { return nil }
func (nopConn) Close() error                     { return nil }
