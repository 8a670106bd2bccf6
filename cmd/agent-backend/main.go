// Command agent-backend is the agentbe CLI:
//
//	agent-backend daemon --rootDir DIR [flags]      serve a workspace (MCP, SSH)
//	agent-backend sftp-server --rootDir DIR        SFTP on stdin/stdout, jailed to DIR
//	agent-backend ssh-proxy --url ws://H:P/ssh     stdin/stdout to the daemon's /ssh (OpenSSH ProxyCommand)
//	agent-backend hostkey --file KEYFILE           the host key's fingerprint and known_hosts line
//	agent-backend migrate --from S --to S …         move tenants between daemons when the shard list changes
//
// It is a drop-in for the TypeScript reference's `agent-backend` binary: the
// flags are the ones its client passes.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/agentbe/agent-backend/internal/buildinfo"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/procs"
)

// version is reported by --version and /health; a release build sets it
// with -ldflags "-X main.version=…".
var version = agentbe.Version

func main() {
	hideSecrets(os.Args)
	// Descriptors this process inherited (a supervisor's socket, a shell's
	// spare one) must not reach the commands and sandboxes it starts. The
	// token descriptor of hideSecrets is still readable: close-on-exec only
	// closes it in children.
	procs.CloseInheritedOnExec()
	// The daemon reaps the orphans its sandboxes leave (see
	// procs.ReapOrphans), before it starts its first command. Only here,
	// in the process's own main: tests that call run start children of
	// their own, which a reaper could take from them.
	if len(os.Args) > 1 && os.Args[1] == "daemon" {
		if err := procs.ReapOrphans(); err != nil {
			fmt.Fprintf(os.Stderr, "agent-backend daemon: %v\n", err)
			os.Exit(1)
		}
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the CLI and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 1
	}
	switch args[0] {
	case "daemon":
		return runDaemon(args[1:], stdin, stdout, stderr)
	case "ssh-proxy":
		return runSSHProxy(args[1:], stdin, stdout, stderr)
	case "sftp-server":
		return runSFTPServer(args[1:], stdin, stdout, stderr)
	case "hostkey":
		return runHostKey(args[1:], stdout, stderr)
	case "migrate":
		return runMigrate(args[1:], stdin, stdout, stderr)
	case "--version", "-v", "version":
		fmt.Fprintf(stdout, "agent-backend %s (%s)\n", version, buildinfo.Read())
		return 0
	case "--help", "-h", "help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "agent-backend: unknown command %q\n", args[0])
	usage(stderr)
	return 1
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  agent-backend daemon --rootDir DIR [--local-only] [--scopePath P] [--isolation auto|bwrap|software|none] [--shell auto|bash|sh] [--port N] [--auth-token T]
  agent-backend sftp-server --rootDir DIR
  agent-backend ssh-proxy --url ws://HOST:PORT/ssh [--token-file FILE]
  agent-backend hostkey --file KEYFILE [--host NAME[,NAME...]] [--port N]
  agent-backend migrate --from H:P,... --to H:P,... --prefix DIR --known-hosts FILE [--token-file FILE] [--keys FILE] [--delete-source] ...
  agent-backend --version | --help
`)
}
