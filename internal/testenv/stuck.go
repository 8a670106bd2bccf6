package testenv

import (
	"bufio"
	"net"
	"strings"
	"testing"
)

// StuckClient sends request (a whole HTTP/1.1 request, headers and body)
// to addr on a connection with a small receive buffer, reads the response's
// status line, and then reads nothing more: a client that stopped reading.
// It returns the status line; the connection closes with the test.
func StuckClient(t testing.TB, addr, request string) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(addr, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := conn.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the status line: %v", err)
	}
	return status
}
