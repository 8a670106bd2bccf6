// Command testserver serves acp.NewHandler over a Local workspace on a
// loopback port, for the Node interop tests (sandbox-agent's SDK against
// our handler) and for benchmarks against the sandbox-agent binary. It is
// not part of the product.
//
//	testserver -root DIR [-listen 127.0.0.1:0] [-agent id=command]...
//
// It prints "listening URL" once serving. The "test" agent runs the Node
// test agent (interop/testdata/acp/agent.mjs), installed from DIR/src by its
// install command; $ACP_SDK must name the ACP SDK's dist/acp.js.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/acp"
)

type agentFlags []string

func (a *agentFlags) String() string     { return strings.Join(*a, ",") }
func (a *agentFlags) Set(v string) error { *a = append(*a, v); return nil }

func main() {
	root := flag.String("root", "", "workspace directory")
	listen := flag.String("listen", "127.0.0.1:0", "listen address (loopback)")
	isolation := flag.String("isolation", "none", "isolation mode of the workspace's commands")
	var extra agentFlags
	flag.Var(&extra, "agent", "extra agent id=command (repeatable)")
	flag.Parse()
	if err := run(*root, *listen, agentbe.Isolation(*isolation), extra); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(1)
	}
}

func run(root, listen string, isolation agentbe.Isolation, extra []string) error {
	local, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: root, Isolation: isolation})
	if err != nil {
		return err
	}
	defer local.Destroy(context.Background())
	reg, err := acp.NewRegistry(acp.Agent{ID: "test", Command: "exec node .agents/agent.mjs",
		Install: "mkdir -p .agents && cp src/agent.mjs .agents/agent.mjs", Check: ".agents/agent.mjs",
		Env: map[string]string{"ACP_SDK": os.Getenv("ACP_SDK")}})
	if err != nil {
		return err
	}
	for _, v := range extra {
		a, err := acp.ParseAgentFlag(v)
		if err != nil {
			return err
		}
		a.Env = map[string]string{"ACP_SDK": os.Getenv("ACP_SDK")}
		if err := reg.Set(a); err != nil {
			return err
		}
	}
	h, err := acp.NewHandler(acp.Config{Agents: reg, MaxFileBytes: -1,
		Resolve: func(r *http.Request) (agentbe.Backend, func(), error) { return local, nil, nil }})
	if err != nil {
		return err
	}
	defer h.Close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Printf("listening http://%s\n", ln.Addr())
	srv := &http.Server{Handler: h}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
