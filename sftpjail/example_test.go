package sftpjail_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/agentbe/agent-backend/sftpjail"
)

// pipeConn is one end of a pair of OS pipes.
type pipeConn struct {
	*os.File // read end
	w        *os.File
}

func (p pipeConn) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipeConn) Close() error                { p.w.Close(); return p.File.Close() }

// Example serves a workspace over a pair of pipes and uses the client on
// the other end: a workspace path never reaches outside the root.
func Example() {
	dir, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(dir)
	root, err := os.OpenRoot(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer root.Close()

	cr, sw, _ := os.Pipe()
	sr, cw, _ := os.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- sftpjail.Serve(pipeConn{sr, sw}, root, nil)
		sw.Close()
		sr.Close()
	}()

	ctx := context.Background()
	c, err := sftpjail.NewClient(pipeConn{cr, cw})
	if err != nil {
		log.Fatal(err)
	}
	f, _ := c.Create(ctx, "/notes/hello.txt") // parent created on the fly
	io.Copy(f, strings.NewReader("hello, workspace\n"))
	f.Close()

	r, _ := c.Open(ctx, "notes/hello.txt")
	data, _ := io.ReadAll(r)
	r.Close()
	fmt.Print(string(data))

	p, _ := c.RealPath(ctx, "notes/../notes/hello.txt")
	fmt.Println(p)

	_, err = c.Stat(ctx, "../etc/passwd")
	fmt.Println(err != nil)

	c.Close()
	fmt.Println(<-served)
	// Output:
	// hello, workspace
	// /notes/hello.txt
	// true
	// <nil>
}
