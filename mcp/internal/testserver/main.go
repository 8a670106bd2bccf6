// Command testserver is the MCP server and client the mcp package's
// interop and conformance tests drive. It is not part of the product.
//
//	testserver -stdio                 serve the dummy tools on stdin/stdout
//	testserver -http 127.0.0.1:0      serve them over Streamable HTTP; prints "listening URL"
//	testserver -client URL            the conformance suite's client: initialize,
//	                                  list tools, call add_numbers when present
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/agentbe/agent-backend/mcp"
)

func main() {
	stdio := flag.Bool("stdio", false, "serve over stdio")
	httpAddr := flag.String("http", "", "serve Streamable HTTP on this address")
	client := flag.String("client", "", "run as conformance client against this URL")
	flag.Parse()
	var err error
	switch {
	case *stdio:
		err = mcp.ServeStdio(context.Background(), newServer(), os.Stdin, os.Stdout)
	case *httpAddr != "":
		err = serveHTTP(*httpAddr)
	case *client != "" || flag.NArg() > 0:
		u := *client
		if u == "" {
			u = flag.Arg(flag.NArg() - 1)
		}
		err = runClient(u)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(1)
	}
}

var (
	started   atomic.Int64
	cancelled atomic.Int64
)

var objSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)

// tools are the test server's tools; newServer serves them.
var tools = mcp.NewToolSet(
	mcp.Tool{Name: "echo", Description: "Echoes text.", InputSchema: objSchema},
	mcp.Tool{Name: "slow", Description: "Blocks until cancelled (or 60 s).", InputSchema: json.RawMessage(`{"type":"object"}`)},
	mcp.Tool{Name: "stats", Description: "Counts of slow calls started and cancelled.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	mcp.Tool{Name: "panic", Description: "Panics.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	mcp.Tool{Name: "fail", Description: "Returns an error.", InputSchema: json.RawMessage(`{"type":"object"}`)},
)

func newServer() *mcp.Server {
	return mcp.NewServer(mcp.Implementation{Name: "agentbe-testserver", Version: "0.0.1"}, mcp.ServerOptions{}, tools,
		func(ctx context.Context, call mcp.ToolCall) (*mcp.CallToolResult, error) {
			switch call.Name {
			case "echo":
				var a struct {
					Text string `json:"text"`
				}
				if err := json.Unmarshal(call.Arguments, &a); err != nil {
					return mcp.InvalidArgumentsResult("echo", err.Error()), nil
				}
				return mcp.TextResult(a.Text), nil
			case "slow":
				started.Add(1)
				select {
				case <-ctx.Done():
					cancelled.Add(1)
					return nil, ctx.Err()
				case <-time.After(60 * time.Second):
					return mcp.TextResult("finished"), nil
				}
			case "stats":
				return mcp.TextResult(`{"started":` + strconv.FormatInt(started.Load(), 10) + `,"cancelled":` + strconv.FormatInt(cancelled.Load(), 10) + `}`), nil
			case "panic":
				panic("boom")
			case "fail":
				return nil, errors.New("it failed")
			}
			return nil, errors.New("no tool " + call.Name)
		})
}

func serveHTTP(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h := mcp.NewHTTPHandler(func(*http.Request) (*mcp.Server, func(), error) { return newServer(), nil, nil }, mcp.HTTPOptions{})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	fmt.Printf("listening http://%s/mcp\n", ln.Addr())
	srv := &http.Server{Handler: mux}
	go func() {
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt)
		<-c
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// runClient is what the conformance suite's client scenarios run.
func runClient(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewHTTPClient(url, mcp.HTTPClientOptions{ClientOptions: mcp.ClientOptions{
		Info: mcp.Implementation{Name: "agentbe-conformance-client", Version: "0.0.1"}}})
	defer c.Close()
	if _, err := c.Initialize(ctx); err != nil {
		return err
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if t.Name == "add_numbers" {
			res, err := c.CallTool(ctx, "add_numbers", map[string]any{"a": 5, "b": 3})
			if err != nil {
				return err
			}
			fmt.Printf("add_numbers: %+v\n", res.Content)
		}
	}
	return nil
}
