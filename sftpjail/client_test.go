package sftpjail

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// silentServer answers INIT, then reads requests without answering until
// stop is closed, then drops the connection.
func silentServer(t *testing.T, stop <-chan struct{}, got chan<- byte) io.ReadWriteCloser {
	cr, sw, _ := os.Pipe()
	sr, cw, _ := os.Pipe()
	go func() {
		defer sw.Close()
		defer sr.Close()
		var buf []byte
		if _, err := readPacket(sr, &buf); err != nil {
			return
		}
		sw.Write(pkt(fxpVersion, u32f(3)))
		go func() {
			for {
				body, err := readPacket(sr, &buf)
				if err != nil {
					return
				}
				got <- body[0]
			}
		}()
		<-stop
	}()
	return &pipeRW{Reader: cr, Writer: cw, closers: []io.Closer{cw, cr}}
}

// TestBrokenConnectionFailsPending: when the connection drops, every
// request in flight fails at once with ErrConnClosed, and so does every
// later one.
func TestBrokenConnectionFailsPending(t *testing.T) {
	stop := make(chan struct{})
	got := make(chan byte, 100)
	c, err := NewClient(silentServer(t, stop, got))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 10
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			_, err := c.Stat(context.Background(), "x")
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		<-got // all requests reached the server
	}
	close(stop)
	for i := 0; i < n; i++ {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrConnClosed) {
				t.Fatalf("pending request: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a pending request was not failed")
		}
	}
	if _, err := c.Stat(context.Background(), "x"); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("request after the break: %v", err)
	}
}

// TestContextCancel: a request waits only as long as its context.
func TestContextCancel(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	got := make(chan byte, 100)
	c, err := NewClient(silentServer(t, stop, got))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Stat(ctx, "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stat: %v", err)
	}
	if _, err := c.Open(ctx, "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Open: %v", err)
	}
	// Handshake bounded too: nobody answers INIT.
	cr, peerW, _ := os.Pipe()
	peerR, cw, _ := os.Pipe()
	defer peerW.Close()
	defer peerR.Close()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := NewClientContext(ctx2, &pipeRW{Reader: cr, Writer: cw, closers: []io.Closer{cw, cr}}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("handshake: %v", err)
	}
}

// TestClientConcurrentUse: many goroutines share one client.
func TestClientConcurrentUse(t *testing.T) {
	c, dir := newTestClient(t)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := "c/" + string(rune('a'+i)) + ".bin"
			data := bytes.Repeat([]byte{byte(i)}, 200000+i)
			f, err := c.Create(ctx, name)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := f.Write(data); err != nil {
				t.Error(err)
			}
			f.Close()
			f, err = c.Open(ctx, name)
			if err != nil {
				t.Error(err)
				return
			}
			back, err := io.ReadAll(f)
			f.Close()
			if err != nil || !bytes.Equal(back, data) {
				t.Errorf("%s: %v, %d bytes", name, err, len(back))
			}
		}(i)
	}
	wg.Wait()
	entries, _ := os.ReadDir(filepath.Join(dir, "c"))
	if len(entries) != 16 {
		t.Fatalf("%d files", len(entries))
	}
}

// TestPipelinedOverlappingWrites: writes in flight at overlapping offsets
// land in request order, and a read after them sees the last.
func TestPipelinedOverlappingWrites(t *testing.T) {
	dir := tempDir(t)
	c := newClientFor(t, dir, &ServerOptions{alwaysConcurrent: true})
	ctx := ctxT(t)
	f, err := c.OpenFile(ctx, "o.bin", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var calls []*call
	for i := 0; i < 50; i++ {
		data := bytes.Repeat([]byte{byte('a' + i%26)}, 1000)
		cl, err := f.startWrite(int64(i%5)*100, data)
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, cl)
	}
	rd, err := f.startRead(0, 2000)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range calls {
		r, err := cl.wait(ctx, nil)
		if err != nil || statusOf(&r) != nil {
			t.Fatal(err, statusOf(&r))
		}
		r.release()
	}
	r, err := rd.wait(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := readResult(&r)
	if err != nil {
		t.Fatal(err)
	}
	want := readFile(t, filepath.Join(dir, "o.bin"))
	if string(data) != want {
		t.Fatal("read in flight after the writes does not see them")
	}
	// Last write (i=49, 'x') covers [400,1400); i=48 ('w') [300,1300) ...
	exp := make([]byte, 1400)
	for i := 0; i < 50; i++ {
		copy(exp[(i%5)*100:], bytes.Repeat([]byte{byte('a' + i%26)}, 1000))
	}
	if want != string(exp) {
		t.Fatal("overlapping writes were not applied in order")
	}
	r.release()
	f.Close()
}

// TestOpenCancelledClosesHandle: a handle the server grants after the
// Open's context ended is closed by the client, not leaked.
func TestOpenCancelledClosesHandle(t *testing.T) {
	client, server := socketPair(t)
	defer server.Close()
	gotClose := make(chan string, 1)
	release := make(chan struct{})
	go func() {
		var buf []byte
		if _, err := readPacket(server, &buf); err != nil {
			return
		}
		server.Write(pkt(fxpVersion, u32f(3)))
		body, err := readPacket(server, &buf)
		if err != nil || body[0] != fxpOpen {
			return
		}
		d := decoder{b: body[1:]}
		id := d.u32()
		<-release
		server.Write(pkt(fxpHandle, u32f(id), strf("h1")))
		body, err = readPacket(server, &buf)
		if err != nil || body[0] != fxpClose {
			return
		}
		d = decoder{b: body[1:]}
		cid := d.u32()
		gotClose <- d.str()
		server.Write(pkt(fxpStatus, u32f(cid), u32f(statusOK), strf(""), strf("")))
	}()
	c, err := NewClient(client)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := c.Open(ctx, "f"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Open: %v", err)
	}
	close(release)
	select {
	case h := <-gotClose:
		if h != "h1" {
			t.Fatalf("closed %q", h)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the late handle was never closed")
	}
}
