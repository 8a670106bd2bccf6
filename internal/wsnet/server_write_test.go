package wsnet

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// readServerFrame reads one unmasked frame.
func readServerFrame(r *bufio.Reader) (op byte, payload []byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	payload = make([]byte, n)
	_, err = io.ReadFull(r, payload)
	return h[0] & 0x0f, payload, err
}

// TestWSConnQueuedWrites: queued frames arrive whole and in order, of every
// header size, and the close frame comes after all of them.
func TestWSConnQueuedWrites(t *testing.T) {
	srv, cli := tcpPair(t)
	c := NewServerConn(srv, nil)
	var want [][]byte
	for i := 0; i < 300; i++ {
		p := bytes.Repeat([]byte{byte(i)}, []int{1, 125, 126, 4000, 70000}[i%5])
		want = append(want, p)
	}
	done := make(chan error, 1)
	go func() {
		for _, p := range want {
			if _, err := c.Write(p); err != nil {
				done <- err
				return
			}
		}
		done <- c.CloseWith(CloseNormal, "bye")
	}()
	r := bufio.NewReader(cli)
	for i, p := range want {
		op, got, err := readServerFrame(r)
		if err != nil || op != opBinary || !bytes.Equal(got, p) {
			t.Fatalf("frame %d: op %d, %d bytes, err %v; want %d bytes", i, op, len(got), err, len(p))
		}
	}
	op, got, err := readServerFrame(r)
	if err != nil || op != opClose || binary.BigEndian.Uint16(got) != CloseNormal || string(got[2:]) != "bye" {
		t.Fatalf("close frame: op %d %q %v", op, got, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.wmu.Lock()
	if cap(c.pend) > maxKeptSpare || cap(c.spare) > maxKeptSpare {
		t.Errorf("idle connection keeps buffers of %d and %d bytes", cap(c.pend), cap(c.spare))
	}
	c.wmu.Unlock()
	if _, err := c.Write([]byte("late")); !errors.Is(err, errServerClosed) {
		t.Fatalf("Write after close: %v", err)
	}
}

// TestWSConnStalledPeer: against a peer that reads nothing, writes block
// once the queue is full (memory stays bounded), CloseWith still returns
// (its one-second deadline), and the blocked writer gets an error.
func TestWSConnStalledPeer(t *testing.T) {
	srv, _ := tcpPair(t)
	c := NewServerConn(srv, nil)
	writerDone := make(chan error, 1)
	go func() {
		p := make([]byte, 64<<10)
		for i := 0; i < 1<<12; i++ { // 256 MiB: far beyond the socket buffers and the queue
			if _, err := c.Write(p); err != nil {
				writerDone <- err
				return
			}
		}
		writerDone <- nil
	}()
	// Wait until the writer is stuck behind a full queue.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c.wmu.Lock()
		full := len(c.pend) >= maxPendingWrite
		c.wmu.Unlock()
		if full {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the queue never filled")
		}
	}
	c.wmu.Lock()
	if n := len(c.pend); n > maxPendingWrite+64<<10+14 {
		t.Errorf("%d bytes queued, bound %d", n, maxPendingWrite)
	}
	c.wmu.Unlock()
	closed := make(chan error, 1)
	go func() { closed <- c.CloseWith(CloseNormal, "") }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("CloseWith hung on a stalled peer")
	}
	select {
	case err := <-writerDone:
		if err == nil {
			t.Fatal("the blocked writer wrote everything to a peer that read nothing")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the blocked writer never returned")
	}
}

// TestWSConnWriteErrorSticks: once the connection fails, every later
// Write returns an error instead of queueing more.
func TestWSConnWriteErrorSticks(t *testing.T) {
	srv, cli := tcpPair(t)
	c := NewServerConn(srv, nil)
	cli.(*net.TCPConn).SetLinger(0)
	cli.Close() // the peer resets: writes fail
	p := make([]byte, 32<<10)
	var err error
	for deadline := time.Now().Add(10 * time.Second); err == nil && time.Now().Before(deadline); {
		_, err = c.Write(p)
		time.Sleep(time.Millisecond)
	}
	if err == nil {
		t.Fatal("writes to a reset connection kept succeeding")
	}
	if _, err2 := c.Write(p); err2 == nil {
		t.Fatal("a Write after the error succeeded")
	}
}
