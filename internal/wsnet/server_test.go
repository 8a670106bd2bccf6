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

// clientFrame builds a masked client frame with a real masking key.
func clientFrame(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	f := []byte{b0}
	switch n := len(payload); {
	case n <= 125:
		f = append(f, 0x80|byte(n))
	case n <= 0xffff:
		f = append(f, 0x80|126)
		f = binary.BigEndian.AppendUint16(f, uint16(n))
	default:
		f = append(f, 0x80|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	key := []byte{0x37, 0xfa, 0x21, 0x3d}
	f = append(f, key...)
	for i, c := range payload {
		f = append(f, c^key[i%4])
	}
	return f
}

// pipeWS returns a ServerConn on one end of a pipe and the client end.
func pipeWS(t *testing.T, pending []byte) (*ServerConn, net.Conn) {
	t.Helper()
	srv, cli := net.Pipe()
	t.Cleanup(func() { srv.Close(); cli.Close() })
	var br *bufio.Reader
	if pending != nil {
		br = bufio.NewReader(io.MultiReader(bytes.NewReader(pending), &blockReader{}))
		br.Peek(len(pending))
	}
	return NewServerConn(srv, br), cli
}

// blockReader never returns (stands for a connection with nothing more).
type blockReader struct{}

func (blockReader) Read([]byte) (int, error) { select {} }

func TestWSConnReadFrames(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 5000) // 80000 bytes: 64-bit length
	var stream []byte
	stream = append(stream, clientFrame(false, opBinary, []byte("hel"))...)
	stream = append(stream, clientFrame(true, opContinuation, []byte("lo "))...)
	stream = append(stream, clientFrame(true, opText, bytes.Repeat([]byte{'x'}, 300))...)
	stream = append(stream, clientFrame(true, opBinary, big)...)
	stream = append(stream, clientFrame(true, opBinary, nil)...)
	stream = append(stream, clientFrame(true, opClose, []byte{0x03, 0xe8})...)
	// The first frame arrived with the upgrade request (buffered by the
	// HTTP server); the rest comes on the connection.
	c, cli := pipeWS(t, stream[:4])
	go func() { cli.Write(stream[4:]) }()
	got, err := io.ReadAll(c)
	want := append(append([]byte("hello "), bytes.Repeat([]byte{'x'}, 300)...), big...)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(want))
	}
}

func TestWSConnPingAndWrite(t *testing.T) {
	c, cli := pipeWS(t, nil)
	go func() {
		cli.Write(clientFrame(true, opPing, []byte("p1")))
		cli.Write(clientFrame(true, opBinary, []byte("data")))
	}()
	done := make(chan []byte, 1)
	go func() {
		buf := make([]byte, 16)
		n, _ := c.Read(buf)
		done <- buf[:n]
	}()
	// The pong comes first, unmasked, with the ping's payload.
	br := bufio.NewReader(cli)
	var h [2]byte
	io.ReadFull(br, h[:])
	p := make([]byte, h[1])
	io.ReadFull(br, p)
	if h[0] != 0x80|opPong || string(p) != "p1" {
		t.Errorf("pong: %x %q", h, p)
	}
	if got := <-done; string(got) != "data" {
		t.Errorf("data %q", got)
	}
	go c.Write(bytes.Repeat([]byte{7}, 70000))
	io.ReadFull(br, h[:])
	var l [8]byte
	io.ReadFull(br, l[:])
	if h[0] != 0x80|opBinary || h[1] != 127 || binary.BigEndian.Uint64(l[:]) != 70000 {
		t.Errorf("binary frame header %x %x", h, l)
	}
	io.CopyN(io.Discard, br, 70000)
	go c.CloseWith(CloseUnauthorized, "Unauthorized")
	io.ReadFull(br, h[:])
	p = make([]byte, h[1])
	io.ReadFull(br, p)
	if h[0] != 0x80|opClose || binary.BigEndian.Uint16(p) != 4001 || string(p[2:]) != "Unauthorized" {
		t.Errorf("close frame %x %q", h, p)
	}
	if _, err := c.Write([]byte("late")); !errors.Is(err, errServerClosed) {
		t.Errorf("write after close: %v", err)
	}
}

func TestWSConnProtocolErrors(t *testing.T) {
	unmasked := []byte{0x82, 0x03, 'a', 'b', 'c'}
	rsv := clientFrame(true, opBinary, []byte("x"))
	rsv[0] |= 0x40
	longPing := clientFrame(true, opPing, bytes.Repeat([]byte{1}, 126))
	badOp := clientFrame(true, 0x3, []byte("x"))
	for name, frame := range map[string][]byte{"unmasked": unmasked, "rsv": rsv, "long ping": longPing, "opcode": badOp} {
		c, cli := pipeWS(t, nil)
		go cli.Write(frame)
		c.raw.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 10)); !errors.Is(err, errProtocol) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzWSConnRead feeds arbitrary bytes as client frames: no panic, no
// allocation driven by an announced length, and never more bytes out than
// came in.
func FuzzWSConnRead(f *testing.F) {
	f.Add(clientFrame(true, opBinary, []byte("hello")))
	f.Add(append(clientFrame(false, opText, []byte("a")), clientFrame(true, opContinuation, []byte("b"))...))
	f.Add(clientFrame(true, opPing, []byte("x")))
	f.Add([]byte{0x82, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		srv, cli := net.Pipe()
		defer cli.Close()
		go io.Copy(io.Discard, cli) // pongs
		c := NewServerConn(srv, nil)
		c.br = bufio.NewReader(bytes.NewReader(data))
		out, _ := io.ReadAll(io.LimitReader(c, int64(len(data))+1))
		if len(out) > len(data) {
			t.Fatalf("%d bytes out of %d in", len(out), len(data))
		}
		srv.Close()
	})
}
