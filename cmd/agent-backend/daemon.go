package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/mcp"
)

// runDaemon runs `agent-backend daemon`. With --local-only it serves the
// workspace's MCP tools on stdin/stdout (no network listener, and no
// dangerous-command blocking: local-only mode trusts the local user, as
// docs/daemon.md describes) until stdin closes or a SIGINT/SIGTERM arrives.
func runDaemon(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := parseDaemonFlags(args)
	if errors.Is(err, errHelp) {
		daemonUsage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "agent-backend daemon: %v (see agent-backend daemon --help)\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if !cfg.LocalOnly {
		return runFullDaemon(ctx, cfg, stdout, stderr)
	}
	if err := serveLocalOnly(ctx, cfg, stdin, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "agent-backend daemon: %v\n", err)
		return 1
	}
	return 0
}

// serveLocalOnly builds the backend cfg describes and serves it over stdio.
func serveLocalOnly(ctx context.Context, cfg daemonConfig, stdin io.Reader, stdout, stderr io.Writer) error {
	local, err := agentbe.NewLocal(agentbe.LocalConfig{
		RootDir:        cfg.RootDir,
		Isolation:      agentbe.Isolation(cfg.Isolation),
		Shell:          agentbe.Shell(cfg.Shell),
		AllowDangerous: true,
		Limits:         cfg.ExecLimits,
		Network:        cfg.ExecNetwork,
	})
	if err != nil {
		return err
	}
	// Destroy ends whatever is still running once serving stops.
	defer local.Destroy(context.Background())
	var b agentbe.Backend = local
	if cfg.ScopePath != "" {
		s, err := local.Scope(cfg.ScopePath, agentbe.ScopeOptions{})
		if err != nil {
			return err
		}
		b = s
	}
	fmt.Fprintf(stderr, "agent-backend daemon: serving MCP on stdio for %s\n", b.RootDir())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A client shuts a stdio server down by closing its stdin (MCP
	// lifecycle): calls still running then get a short grace to answer
	// and are cancelled, which kills their commands, so the daemon exits
	// promptly instead of waiting for a long exec.
	in := &eofReader{r: stdin, onEOF: func() { time.AfterFunc(eofGrace, cancel) }}
	// Long exec calls may become MCP tasks; they end with the process.
	tasks := mcp.NewTaskStore(mcp.TaskOptions{})
	defer tasks.Close()
	err = mcp.ServeStdio(ctx, agentbe.NewMCPServerWith(b, agentbe.MCPServerOptions{ServerOptions: mcp.ServerOptions{Tasks: tasks}}), in, stdout)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// eofGrace is how long running calls may still answer after stdin closed.
const eofGrace = 500 * time.Millisecond

// eofReader calls onEOF once when r reports io.EOF (or any read error).
type eofReader struct {
	r     io.Reader
	onEOF func()
	once  sync.Once
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(e.onEOF)
	}
	return n, err
}

func daemonUsage(w io.Writer) {
	fmt.Fprint(w, `usage: agent-backend daemon --rootDir DIR [flags]

  --rootDir DIR               workspace root (required)
  --scopePath P               serve only the sub-directory P of the workspace
  --isolation MODE            auto (default), bwrap, software or none
  --shell SHELL               auto (default), bash or sh
  --local-only                serve MCP on stdin/stdout, no network listener
  --host ADDR                 bind address (default: all interfaces)
  --port N                    HTTP port, 1024-65535 (default 3001)
  --auth-token T              bearer token for HTTP and SSH-over-WebSocket
                              (visible in ps: prefer --auth-token-file). At
                              least 32 bytes and not a published placeholder,
                              whatever its source, else the daemon exits 1;
                              make one with: openssl rand -hex 32
  --auth-token-file PATH      read the bearer token from a file
  --auth-token-fd N           read the bearer token from descriptor N (the
                              daemon re-executes itself this way so that the
                              token leaves its argv and environment)
  --disable-ssh-ws            no SSH-over-WebSocket endpoint
  --ssh-host-key PATH         SSH host key file, loaded, or created if missing
                              (default /var/lib/agentbe/ssh_host_ed25519_key;
                              a created key is RSA-2048 whatever the name, as
                              the reference daemon does). Its fingerprint is
                              logged at start; clients pin it (agent-backend
                              hostkey --file PATH prints a known_hosts line)
  --conventional-ssh          also run /usr/sbin/sshd (Linux, as root). This
                              changes the machine: it creates the users as
                              system accounts (kept after exit), sets their
                              passwords, adds keys to the first user's
                              ~/.ssh/authorized_keys, and writes the sshd
                              drop-in /etc/ssh/sshd_config.d/agentbe.conf
                              (password and root logins on), removed on exit.
                              With --host, sshd listens on that address only
  --ssh-port N                sshd port, 1-65535 (default 22)
  --ssh-users U:P[,U:P...]    sshd users (default root:agents, a published
                              password: the daemon refuses to start sshd
                              with it unless --allow-default-ssh-password).
                              Visible in ps until the daemon re-executes
                              itself without them: prefer --ssh-users-file
  --ssh-users-file PATH       sshd users from a file (one U:P a line, or
                              comma-separated; "#" comments), "-" for stdin
  --allow-default-ssh-password
                              accept root:agents for --conventional-ssh (it
                              is then logged as a warning): anyone who
                              reaches the sshd port can log in as root
  --ssh-public-key KEY        public key for the first sshd user
  --ssh-authorized-keys PATH  authorized_keys file for the first sshd user
  --acp-agent ID=COMMAND      an ACP agent for /v1/acp (repeatable; overrides
                              a built-in of the same id)
  --acp-agents-file PATH      ACP agents as a JSON array (id, command, install,
                              check, hostEnv, env)
  --log-level LEVEL           debug, info (default), warn or error; requests
                              that succeed are logged at debug
  --log-format FORMAT         text (default: logfmt lines) or json (one JSON
                              object a line); every line of a request carries
                              its request_id
  --audit-log FILE|-          append an audit record (one JSON object a line)
                              for every command, file change, MCP tool call,
                              ACP agent start/stop and refused authentication
                              to FILE (created 0600), or to stdout with -
  --max-ssh-conns N           concurrent /ssh connections (default 64)
  --max-inflight N            concurrent /mcp and /v1 requests (default 256)
  --max-channels-per-conn N   concurrent channels (commands, SFTP) of one SSH
                              connection (default 16)
  --max-acp-instances N       live ACP agent processes (default 64; beyond,
                              starting one answers 429)
  --max-uploads N             concurrent /v1 uploads (PUT /v1/fs/file,
                              POST /v1/fs/upload-batch; default 32)
  --tenants FILE              tenants: JSON {"tenants":[{"name","tokenSha256",
                              "scope","limits":{...},"network"}]}; a tenant's
                              token reaches only its scope, with caps of its
                              own (429 beyond). Needs bwrap isolation; excludes
                              --scopePath; without an operator token only
                              tenants get in. SIGHUP reloads it (see
                              docs/tenancy.md)
                              A full daemon answers a request or an /ssh
                              upgrade 503 with Retry-After and "daemon full"
`)
}
