// Command getbench times whole-file HTTP GETs with as little client work
// as possible (one request per connection, 4 MiB reads, no HTTP client
// library), so that the server, not the client, bounds the figure. For
// bench/fs-get.sh; not part of the product.
//
//	getbench [-H 'Name: value']... URL...
//
// It prints one line per URL: MiB/s, bytes received (headers included).
package main

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

func main() {
	var hs headers
	flag.Var(&hs, "H", "extra request header (repeatable)")
	flag.Parse()
	buf := make([]byte, 4<<20)
	for _, raw := range flag.Args() {
		u, err := url.Parse(raw)
		if err != nil {
			fail(err)
		}
		start := time.Now()
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			fail(err)
		}
		req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: close\r\n"
		for _, h := range hs {
			req += h + "\r\n"
		}
		if _, err := c.Write([]byte(req + "\r\n")); err != nil {
			fail(err)
		}
		n := 0
		for {
			k, err := c.Read(buf)
			if n == 0 && !strings.HasPrefix(string(buf[:k]), "HTTP/1.1 200") {
				fail(fmt.Errorf("%s: %q", raw, buf[:min(k, 80)]))
			}
			n += k
			if err != nil {
				break
			}
		}
		c.Close()
		fmt.Printf("%.0f %d\n", float64(n)/time.Since(start).Seconds()/(1<<20), n)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "getbench:", err)
	os.Exit(1)
}
