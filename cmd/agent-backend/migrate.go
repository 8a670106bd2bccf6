package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

const migrateUsage = `usage: agent-backend migrate --from H:P[,H:P...] --to H:P[,H:P...] --prefix DIR
         --known-hosts FILE [--token-file FILE] [--keys FILE] [--journal FILE]
         [--parallel N] [--root-dir DIR] [--secure] [--dry-run] [--overwrite] [--delete-source]

Moves the tenants whose daemon changes when a sharded agentbe.Pool's shard
list goes from --from to --to (a replica added or removed: about 1/n of
the tenants move). Each tenant is a directory PREFIX/KEY of its daemon's
workspace, KEY being its Pool key. The plan is printed first; then each
moving tenant is copied from its old daemon to its new one over SFTP
(directories, files with their permission bits and modification times,
links as links, never followed), every file verified by size and SHA-256
before it is put in place. Stop the tenants' clients first (see
docs/scaling.md); a tenant whose files change during the copy fails.

Interrupted (Ctrl-C, a lost connection), run the same command again: the
journal lets it skip what was copied and verified. Sources are kept unless
--delete-source is given; it deletes a tenant's source only once its copy is
complete and verified (files copied by an earlier run are hashed again).

  --from, --to       the shard lists, as in PoolConfig.Shards (host:port of
                     each daemon, comma-separated; order does not matter)
  --prefix DIR       the workspace directory holding one directory per
                     tenant ("/" for the top level)
  --keys FILE        the tenant keys, one per line ("-": stdin); by default
                     they are the directories found under --prefix on every
                     --from daemon (a directory on a daemon that is not its
                     key's shard is reported as a stray and not moved)
  --known-hosts FILE known_hosts lines of the daemons' host keys
                     (agent-backend hostkey prints them); required
  --token-file FILE  the daemons' auth token
  --journal FILE     where progress is recorded (default
                     agent-backend-migrate.journal); kept for re-runs
  --parallel N       tenants copied at once (default 2)
  --root-dir DIR     the workspace directory as the Remote's RootDir names
                     it (default /, the daemon's whole workspace)
  --secure           wss:// instead of ws://
  --dry-run          print the plan (and strays), copy nothing
  --overwrite        replace destination content that differs from the
                     source although this migration did not write it
  --delete-source    delete each source once its copy is verified

Exit status: 0 when every tenant was moved (or, with --dry-run, planned);
1 otherwise.
`

// migrateFlags are the parsed flags of `agent-backend migrate`.
type migrateFlags struct {
	from, to     []string
	prefix       string
	keysFile     string
	knownHosts   string
	tokenFile    string
	journal      string
	parallel     int
	rootDir      string
	secure       bool
	dryRun       bool
	overwrite    bool
	deleteSource bool
}

func parseMigrateFlags(args []string) (*migrateFlags, error) {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &migrateFlags{}
	from := fs.String("from", "", "")
	to := fs.String("to", "", "")
	fs.StringVar(&f.prefix, "prefix", "", "")
	fs.StringVar(&f.keysFile, "keys", "", "")
	fs.StringVar(&f.knownHosts, "known-hosts", "", "")
	fs.StringVar(&f.tokenFile, "token-file", "", "")
	fs.StringVar(&f.journal, "journal", "agent-backend-migrate.journal", "")
	fs.IntVar(&f.parallel, "parallel", 2, "")
	fs.StringVar(&f.rootDir, "root-dir", "/", "")
	fs.BoolVar(&f.secure, "secure", false, "")
	fs.BoolVar(&f.dryRun, "dry-run", false, "")
	fs.BoolVar(&f.overwrite, "overwrite", false, "")
	fs.BoolVar(&f.deleteSource, "delete-source", false, "")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if f.from, err = shardList("--from", *from); err != nil {
		return nil, err
	}
	if f.to, err = shardList("--to", *to); err != nil {
		return nil, err
	}
	switch {
	case f.prefix == "":
		return nil, errors.New(`--prefix is required: the workspace directory holding one directory per tenant ("/" for the top level)`)
	case f.knownHosts == "":
		return nil, errors.New("--known-hosts is required: the daemons' host keys (agent-backend hostkey prints the lines)")
	case f.parallel < 1:
		return nil, fmt.Errorf("--parallel must be at least 1, got %d", f.parallel)
	case f.journal == "":
		return nil, errors.New("--journal must name a file")
	case !strings.HasPrefix(f.rootDir, "/"):
		return nil, fmt.Errorf("--root-dir must be absolute, got %q", f.rootDir)
	}
	return f, nil
}

// shardList parses a comma-separated list of host:port.
func shardList(flagName, s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%s is required: the daemons' host:port, comma-separated", flagName)
	}
	var out []string
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			return nil, fmt.Errorf("%s: %q is not host:port", flagName, a)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%s: %q has no valid port", flagName, a)
		}
		out = append(out, a)
	}
	return out, nil
}

// readKeys reads one key per line; blank lines and lines starting with #
// are skipped.
func readKeys(name string, stdin io.Reader) ([]string, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, unwrapPath(err)
		}
		defer f.Close()
		r = f
	}
	var keys []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k := strings.TrimSpace(sc.Text())
		if k != "" && !strings.HasPrefix(k, "#") {
			keys = append(keys, k)
		}
	}
	return keys, sc.Err()
}

// runMigrate implements `agent-backend migrate`.
func runMigrate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, err := parseMigrateFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, migrateUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "agent-backend migrate: %v (see agent-backend migrate --help)\n", err)
		return 1
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "agent-backend migrate: "+format+"\n", a...)
		return 1
	}
	hostKeys, err := agentbe.HostKeyFromKnownHosts(f.knownHosts)
	if err != nil {
		return fail("--known-hosts: %v", err)
	}
	token := ""
	if f.tokenFile != "" {
		if token, err = readTokenFile(f.tokenFile); err != nil {
			return fail("--token-file: %v", err)
		}
	}
	connect := func(ctx context.Context, shard string) (*agentbe.Remote, error) {
		host, port, _ := net.SplitHostPort(shard)
		p, _ := strconv.Atoi(port)
		return agentbe.NewRemote(agentbe.RemoteConfig{RootDir: f.rootDir, Host: host, Port: p, Token: token,
			Secure: f.secure, HostKeyCallback: hostKeys, KeepaliveInterval: 15 * time.Second,
			// OperationTimeout bounds connecting only: the migration's
			// transfers take as long as they take, while keepalives
			// notice a daemon that stopped answering.
			Reconnect: agentbe.ReconnectConfig{Disabled: true}, OperationTimeout: 30 * time.Second})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var keys []string
	if f.keysFile != "" {
		if keys, err = readKeys(f.keysFile, stdin); err != nil {
			return fail("--keys: %v", err)
		}
	} else {
		found, err := agentbe.DiscoverTenants(ctx, f.from, f.prefix, connect)
		if err != nil {
			return fail("discovering the tenants: %v", err)
		}
		for _, s := range agentbe.StrayTenants(found, f.from) {
			fmt.Fprintf(stdout, "warning: %s/%s on %s is a stray: its key's shard is %s; not moved\n",
				strings.Trim(f.prefix, "/"), s.Key, s.Shard, agentbe.ShardFor(s.Key, f.from))
		}
		keys = agentbe.FoundKeys(found)
	}
	plan, err := agentbe.PlanMigration(f.from, f.to, keys, f.prefix)
	if err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(stdout, "plan: %d shards -> %d shards; %d tenants: %d move, %d stay\n",
		len(plan.From), len(plan.To), len(plan.Moves)+plan.Kept, len(plan.Moves), plan.Kept)
	for _, m := range plan.Moves {
		fmt.Fprintf(stdout, "  %s (%s): %s -> %s\n", m.Key, m.Scope, m.From, m.To)
	}
	if f.dryRun || len(plan.Moves) == 0 {
		return 0
	}

	pr := &migrateProgress{w: stdout, last: map[string]time.Time{}}
	start := time.Now()
	report, err := agentbe.Migrate(ctx, plan, agentbe.MigrateOptions{Connect: connect, Journal: f.journal,
		Overwrite: f.overwrite, DeleteSource: f.deleteSource, Parallel: f.parallel, Progress: pr.report})
	if report == nil {
		return fail("%v", err)
	}
	return summarize(stdout, stderr, report, f, time.Since(start))
}

// migrateProgress prints a tenant's progress at most once a second.
type migrateProgress struct {
	w    io.Writer
	mu   sync.Mutex
	last map[string]time.Time
}

func (p *migrateProgress) report(ev agentbe.MigrationProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := ev.Move.Key
	switch ev.Event {
	case agentbe.MigrationStarted:
		p.last[k] = time.Now()
		fmt.Fprintf(p.w, "%s: %s, %s: %s -> %s\n", k, countFiles(ev.TotalFiles), humanBytes(ev.TotalBytes), ev.Move.From, ev.Move.To)
	case agentbe.MigrationFile:
		if time.Since(p.last[k]) >= time.Second {
			p.last[k] = time.Now()
			fmt.Fprintf(p.w, "%s: %d/%d files, %s/%s\n", k, ev.Files, ev.TotalFiles, humanBytes(ev.Bytes), humanBytes(ev.TotalBytes))
		}
	case agentbe.MigrationVerified:
		fmt.Fprintf(p.w, "%s: verified %s, %s\n", k, countFiles(ev.Files), humanBytes(ev.Bytes))
	case agentbe.MigrationSourceDeleted:
		fmt.Fprintf(p.w, "%s: source deleted on %s\n", k, ev.Move.From)
	case agentbe.MigrationFailed:
		fmt.Fprintf(p.w, "%s: FAILED: %v\n", k, ev.Err)
	}
}

// summarize prints each tenant's outcome and the totals; it returns the
// exit status.
func summarize(stdout, stderr io.Writer, report *agentbe.MigrationReport, f *migrateFlags, elapsed time.Duration) int {
	var ok, failed, files, copied, deleted int
	var bytes int64
	for _, r := range report.Tenants {
		k := r.Move.Key
		for _, u := range r.Unmovable {
			fmt.Fprintf(stdout, "%s: warning: %s\n", k, u)
		}
		for _, x := range r.Extra {
			fmt.Fprintf(stdout, "%s: warning: %s is on %s but not in the source (kept)\n", k, x, r.Move.To)
		}
		switch {
		case r.Err != nil:
			failed++
			fmt.Fprintf(stderr, "agent-backend migrate: %s: %v\n", k, r.Err)
			continue
		case r.Missing && r.SourceDeleted:
			fmt.Fprintf(stdout, "%s: already moved (source deleted)\n", k)
		case r.AlreadyMoved && r.SourceDeleted:
			fmt.Fprintf(stdout, "%s: moved by an earlier run; source deleted\n", k)
		case r.AlreadyMoved:
			fmt.Fprintf(stdout, "%s: moved by an earlier run; not copied again\n", k)
		case r.Missing:
			fmt.Fprintf(stdout, "%s: no directory on %s, nothing to move\n", k, r.Move.From)
		default:
			fmt.Fprintf(stdout, "%s: done: %s (%d copied, %d already there), %s copied in %v (%s/s)\n",
				k, countFiles(r.Files), r.CopiedFiles, r.Files-r.CopiedFiles, humanBytes(r.CopiedBytes), r.Elapsed.Round(time.Millisecond),
				humanBytes(int64(float64(r.CopiedBytes)/max(r.Elapsed.Seconds(), 1e-3))))
		}
		if f.deleteSource && !r.SourceDeleted && len(r.Unmovable) > 0 {
			fmt.Fprintf(stdout, "%s: source kept on %s: %d entries could not be copied\n", k, r.Move.From, len(r.Unmovable))
		}
		ok++
		files += r.Files
		copied += r.CopiedFiles
		bytes += r.CopiedBytes
		if r.SourceDeleted {
			deleted++
		}
	}
	fmt.Fprintf(stdout, "summary: %d tenants: %d moved, %d failed; %d files (%d copied, %s) in %v (%s/s); %d sources deleted\n",
		len(report.Tenants), ok, failed, files, copied, humanBytes(bytes), elapsed.Round(time.Millisecond),
		humanBytes(int64(float64(bytes)/max(elapsed.Seconds(), 1e-3))), deleted)
	if failed > 0 {
		fmt.Fprintf(stdout, "run the same command again to resume (journal %s)\n", f.journal)
		return 1
	}
	if !f.deleteSource {
		fmt.Fprintln(stdout, "sources kept: once the pool runs with the new shard list, --delete-source removes them")
	}
	return 0
}

// countFiles says "1 file", "2 files".
func countFiles(n int) string {
	if n == 1 {
		return "1 file"
	}
	return fmt.Sprintf("%d files", n)
}

// humanBytes formats n with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
