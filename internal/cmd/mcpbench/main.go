// Command mcpbench serves the agentbe MCP tools for the benchmark harness
// (bench/README.md) until the full daemon exists, and the bare
// net/http ceiling to compare them with.
//
//	mcpbench -root DIR -addr 127.0.0.1:3921 [-token T]   Streamable HTTP on /mcp: a fresh
//	                                                     agentbe.NewMCPServer(NewLocal(DIR)) per request
//	mcpbench -root DIR -stdio                            the same tools over stdio
//	mcpbench -root DIR ... -memory                       the same over a Memory copy of bench/read1k.txt
//	mcpbench -root DIR -stdio -noop                      stdio ceiling: a precomputed response per
//	                                                     line, the id spliced in by a byte scan
//	mcpbench -root DIR -addr ... -bare                   bare net/http: every POST gets the bytes
//	                                                     of a real read_text_file bench/read1k.txt response
//	mcpbench -root DIR -addr ... -bare -bareread         the same, plus an os.ReadFile of the file per POST
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/procs"
	"github.com/agentbe/agent-backend/mcp"
)

func main() {
	root := flag.String("root", "", "workspace root")
	addr := flag.String("addr", "127.0.0.1:3921", "HTTP listen address")
	token := flag.String("token", "", "bearer token required on /mcp (empty: none)")
	stdio := flag.Bool("stdio", false, "serve over stdio instead of HTTP")
	bare := flag.Bool("bare", false, "bare net/http handler returning a fixed read_text_file response")
	bareRead := flag.Bool("bareread", false, "with -bare or -stdio -noop: also os.ReadFile bench/read1k.txt for every request (the file system's share of the ceiling)")
	pprofAddr := flag.String("pprof", "", "serve net/http/pprof on this address (profiling only)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the stdio run to this file")
	inproc := flag.Int("inproc", 0, "time this many in-process read_text_file dispatches and exit")
	noop := flag.Bool("noop", false, "stdio ceiling: answer every request with bytes computed once at start, no JSON decoding")
	memory := flag.Bool("memory", false, "serve a Memory backend holding a copy of bench/read1k.txt (no file system calls per request)")
	flag.Parse()
	if *root == "" {
		log.Fatal("mcpbench: -root is required")
	}
	var b agentbe.Backend
	var err error
	if *memory {
		b, err = memoryCopy(*root, "bench/read1k.txt")
	} else {
		b, err = agentbe.NewLocal(agentbe.LocalConfig{RootDir: *root})
	}
	if err != nil {
		log.Fatal(err)
	}
	if *inproc > 0 {
		timeInProcess(agentbe.NewMCPServer(b), *inproc)
		return
	}
	if *stdio {
		if *cpuProfile != "" {
			f, err := os.Create(*cpuProfile)
			if err != nil {
				log.Fatal(err)
			}
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
		if *noop {
			fixture := ""
			if *bareRead {
				fixture = filepath.Join(*root, "bench", "read1k.txt")
			}
			noopStdio(agentbe.NewMCPServer(b), fixture)
			return
		}
		if err := mcp.ServeStdio(context.Background(), agentbe.NewMCPServer(b), os.Stdin, os.Stdout); err != nil {
			log.Print(err)
		}
		return
	}
	procs.LeaveOneCore() // as the HTTP daemon will
	var h http.Handler
	if *bare {
		body := agentbe.NewMCPServer(b).HandleBytes(context.Background(),
			[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"bench/read1k.txt"}}}`))
		if !bytes.Contains(body, []byte(`"result"`)) || bytes.Contains(body, []byte(`"isError":true`)) {
			log.Fatalf("mcpbench: bench/read1k.txt not readable (run the harness once first): %s", body)
		}
		clen := strconv.Itoa(len(body))
		fixture := filepath.Join(*root, "bench", "read1k.txt")
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			if *bareRead {
				os.ReadFile(fixture)
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", clen)
			w.Write(body)
		})
	} else {
		h = mcp.NewHTTPHandler(func(r *http.Request) (*mcp.Server, func(), error) {
			if *token != "" && r.Header.Get("Authorization") != "Bearer "+*token {
				return nil, nil, &mcp.HTTPError{Status: http.StatusUnauthorized,
					Body: map[string]string{"error": "Unauthorized", "message": "Invalid or missing authentication token"}}
			}
			return agentbe.NewMCPServer(b), nil, nil
		}, mcp.HTTPOptions{})
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"ok","rootDir":%q}`, b.RootDir())
	})
	if *pprofAddr != "" {
		go func() { log.Println(http.ListenAndServe(*pprofAddr, http.DefaultServeMux)) }()
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("mcpbench: serving %s on http://%s/mcp (bare=%v)", b.RootDir(), ln.Addr(), *bare)
	log.Fatal(http.Serve(ln, mux))
}

// memoryCopy returns a Memory backend with root's RootDir holding a copy
// of the named files.
func memoryCopy(root string, names ...string) (*agentbe.Memory, error) {
	initial := make(map[string][]byte, len(names))
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(root, n))
		if err != nil {
			return nil, err
		}
		initial[n] = data
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	return agentbe.NewMemory(agentbe.MemoryConfig{RootDir: abs, Initial: initial})
}

// noopStdio is the stdio ceiling: the read_text_file bench/read1k.txt
// response is computed once, and every later line gets it back with the
// request's id spliced in by a byte scan (no JSON decoding, one write per
// line). Lines before the first tools/call (initialize, notifications)
// are served by s. With a fixture path, every tools/call also reads that
// file with os.ReadFile (the file system's share of the ceiling).
func noopStdio(s *mcp.Server, fixture string) {
	full := s.HandleBytes(context.Background(),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"bench/read1k.txt"}}}`))
	i := bytes.Index(full, []byte(`"result":`))
	if i < 0 {
		log.Fatalf("mcpbench: no result: %s", full)
	}
	head, tail := []byte(`{"jsonrpc":"2.0","id":`), append(append([]byte(","), full[i:]...), '\n')
	br := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := make([]byte, 0, 4096)
	for {
		line, err := br.ReadSlice('\n')
		if bytes.Contains(line, []byte(`"tools/call"`)) {
			if fixture != "" {
				os.ReadFile(fixture)
			}
			id := line[bytes.Index(line, []byte(`"id":`))+5:]
			id = id[:bytes.IndexAny(id, ",}")]
			out = append(append(append(out[:0], head...), id...), tail...)
			os.Stdout.Write(out)
		} else if len(bytes.TrimSpace(line)) > 0 {
			if resp := s.HandleBytes(context.Background(), line); resp != nil {
				os.Stdout.Write(append(resp, '\n'))
			}
		}
		if err != nil {
			return
		}
	}
}

// timeInProcess prints the mean cost of dispatching read_text_file
// bench/read1k.txt in process, with a long-lived Server and with a fresh
// one per call (as the HTTP daemon does).
func timeInProcess(s *mcp.Server, n int) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"bench/read1k.txt"}}}`)
	ctx := context.Background()
	start := time.Now()
	for i := 0; i < n; i++ {
		s.HandleBytes(ctx, msg)
	}
	fmt.Printf("read_text_file in-process: %.1f µs/call\n", float64(time.Since(start).Microseconds())/float64(n))
	ping := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	start = time.Now()
	for i := 0; i < n; i++ {
		s.HandleBytes(ctx, ping)
	}
	fmt.Printf("ping in-process: %.2f µs/call\n", float64(time.Since(start).Nanoseconds())/1000/float64(n))
}
