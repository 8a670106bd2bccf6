package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/acp"
	"github.com/agentbe/agent-backend/daemon"
)

// daemonConfig is the parsed command line of `agent-backend daemon`, with
// its defaults.
type daemonConfig struct {
	RootDir           string
	ScopePath         string // validated: no leading "/", no ".." element
	Isolation         string // auto, bwrap, software, none
	Shell             string // auto, bash, sh
	Host              string // bind address; "" = all interfaces
	Port              int
	AuthToken         string
	LocalOnly         bool
	DisableSSHWS      bool
	SSHHostKey        string
	ConventionalSSH   bool
	SSHPort           int
	SSHUsers          []sshUser
	SSHPublicKey      string
	SSHAuthorizedKeys string
	ACPAgents         []acp.Agent // --acp-agents-file entries, then --acp-agent ones
	LogLevel          slog.Level  // --log-level (default info)
	LogFormat         string      // --log-format: text ("" is text) or json
	AuditLog          string      // --audit-log: a file, "-" for stdout, "" for none
	// Caps; a full daemon answers 503 (429 for ACP instances).
	MaxSSHConns        int // --max-ssh-conns: concurrent /ssh connections
	MaxInFlight        int // --max-inflight: concurrent /mcp and /v1 requests
	MaxACPInstances    int // --max-acp-instances: live ACP agent processes
	MaxChannelsPerConn int // --max-channels-per-conn: SSH channels of one connection
	MaxUploads         int // --max-uploads: concurrent /v1 uploads

	// TenantsFile (--tenants) is the tenants file: tenant tokens bound to
	// scopes, each with caps of its own.
	TenantsFile string

	// Limits of every command (--exec-memory, --exec-pids, --exec-cpu,
	// --exec-timeout) and its network (--exec-network, default host).
	ExecLimits  agentbe.ResourceLimits
	ExecNetwork agentbe.Network

	// AllowDefaultSSHPassword (--allow-default-ssh-password) accepts
	// --conventional-ssh with an account whose password is the published
	// default root:agents; without it the daemon refuses to start.
	AllowDefaultSSHPassword bool
}

// maxCap is the largest value a cap flag takes.
const maxCap = 1 << 20

// capFlags are the cap flags, each with its field.
func capFlags(cfg *daemonConfig) map[string]*int {
	return map[string]*int{
		"--max-ssh-conns": &cfg.MaxSSHConns, "--max-inflight": &cfg.MaxInFlight,
		"--max-acp-instances": &cfg.MaxACPInstances, "--max-channels-per-conn": &cfg.MaxChannelsPerConn,
		"--max-uploads": &cfg.MaxUploads,
	}
}

// sshUser is one --ssh-users entry.
type sshUser struct{ Name, Password string }

// defaultSSHUser is what --ssh-users defaults to.
var defaultSSHUser = sshUser{"root", "agents"}

// errHelp is returned for --help / -h.
var errHelp = errors.New("help requested")

// parseDaemonFlags parses the flags that follow `daemon`. Every flag is
// `--name value` (space separated, as the TypeScript client passes them;
// `--name=value` is accepted too) or a bare boolean. A value may not start
// with "--" (`--rootDir --port` is a missing value, not a root named
// "--port"). Unknown flags, stray arguments, missing values and values
// outside their rules are errors naming the flag; the caller
// exits with status 1.
func parseDaemonFlags(args []string) (daemonConfig, error) {
	cfg := daemonConfig{
		Isolation: "auto", Shell: "auto", Port: 3001, SSHPort: 22,
		SSHUsers:    []sshUser{defaultSSHUser},
		MaxSSHConns: daemon.DefaultMaxSSHConns, MaxInFlight: daemon.DefaultMaxInFlight,
		MaxACPInstances: acp.DefaultMaxInstances, MaxChannelsPerConn: daemon.DefaultMaxChannels,
		MaxUploads: daemon.DefaultMaxUploads,
	}
	var port, sshPort, sshUsers, usersFile, usersFD, tokenFile, tokenFD, agentsFile, agentFlag, logLevel string
	var agentFlags []string
	strFlags := map[string]*string{
		"--rootDir": &cfg.RootDir, "--scopePath": &cfg.ScopePath, "--isolation": &cfg.Isolation,
		"--shell": &cfg.Shell, "--auth-token": &cfg.AuthToken, "--auth-token-file": &tokenFile, "--auth-token-fd": &tokenFD,
		"--host": &cfg.Host, "--ssh-host-key": &cfg.SSHHostKey,
		"--ssh-public-key": &cfg.SSHPublicKey, "--ssh-authorized-keys": &cfg.SSHAuthorizedKeys,
		"--port": &port, "--ssh-port": &sshPort, "--ssh-users": &sshUsers,
		"--ssh-users-file": &usersFile, "--ssh-users-fd": &usersFD,
		"--acp-agents-file": &agentsFile, "--acp-agent": &agentFlag, "--log-level": &logLevel,
		"--tenants":    &cfg.TenantsFile,
		"--log-format": &cfg.LogFormat, "--audit-log": &cfg.AuditLog,
	}
	execValues := map[string]*string{}
	for _, name := range execLimitFlags {
		execValues[name] = new(string)
		strFlags[name] = execValues[name]
	}
	caps := capFlags(&cfg)
	capValues := map[string]*string{}
	for name := range caps {
		capValues[name] = new(string)
		strFlags[name] = capValues[name]
	}
	boolFlags := map[string]*bool{
		"--local-only": &cfg.LocalOnly, "--disable-ssh-ws": &cfg.DisableSSHWS, "--conventional-ssh": &cfg.ConventionalSSH,
		"--allow-default-ssh-password": &cfg.AllowDefaultSSHPassword,
	}
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--help" || arg == "-h" {
			return cfg, errHelp
		}
		if !strings.HasPrefix(arg, "--") {
			return cfg, fmt.Errorf("unexpected argument %q", arg)
		}
		name, value, hasValue := strings.Cut(arg, "=")
		if b, ok := boolFlags[name]; ok {
			if hasValue {
				return cfg, fmt.Errorf("%s takes no value", name)
			}
			*b = true
			continue
		}
		dst, ok := strFlags[name]
		if !ok {
			return cfg, fmt.Errorf("unrecognized option: %s", name)
		}
		if !hasValue {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
				return cfg, fmt.Errorf("%s requires a value", name)
			}
			i++
			value = args[i]
		}
		seen[name] = true
		*dst = value
		if name == "--acp-agent" { // repeatable
			agentFlags = append(agentFlags, value)
		}
	}
	if cfg.RootDir == "" {
		return cfg, errors.New("--rootDir is required")
	}
	if seen["--port"] {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1024 || n > 65535 {
			return cfg, fmt.Errorf("--port must be an integer between 1024 and 65535, got %q", port)
		}
		cfg.Port = n
	}
	if seen["--ssh-port"] {
		n, err := strconv.Atoi(sshPort)
		if err != nil || n < 1 || n > 65535 {
			return cfg, fmt.Errorf("--ssh-port must be an integer between 1 and 65535, got %q", sshPort)
		}
		cfg.SSHPort = n
	}
	for name, dst := range caps {
		if !seen[name] {
			continue
		}
		n, err := strconv.Atoi(*capValues[name])
		if err != nil || n < 1 || n > maxCap {
			return cfg, fmt.Errorf("%s must be an integer between 1 and %d, got %q", name, maxCap, *capValues[name])
		}
		*dst = n
	}
	given := map[string]string{}
	for name, v := range execValues {
		if seen[name] {
			given[name] = *v
		}
	}
	var err error
	if cfg.ExecLimits, cfg.ExecNetwork, err = parseExecLimits(given); err != nil {
		return cfg, err
	}
	switch cfg.Isolation {
	case "auto", "bwrap", "software", "none":
	default:
		return cfg, fmt.Errorf("--isolation: invalid isolation mode %q (valid: auto, bwrap, software, none)", cfg.Isolation)
	}
	switch cfg.Shell {
	case "auto", "bash", "sh":
	default:
		return cfg, fmt.Errorf("--shell: invalid shell %q (valid: bash, sh, auto)", cfg.Shell)
	}
	if n := count(seen, "--ssh-users", "--ssh-users-file", "--ssh-users-fd"); n > 1 {
		return cfg, errors.New("--ssh-users, --ssh-users-file and --ssh-users-fd are mutually exclusive")
	}
	switch {
	case seen["--ssh-users"]:
		users, err := parseSSHUsers("--ssh-users", sshUsers)
		if err != nil {
			return cfg, err
		}
		cfg.SSHUsers = users
	case seen["--ssh-users-file"]:
		if usersFile == "-" && cfg.LocalOnly {
			return cfg, errors.New("--ssh-users-file -: stdin carries MCP in --local-only mode")
		}
		b, err := readUsersFile(usersFile)
		if err != nil {
			return cfg, fmt.Errorf("--ssh-users-file: %w", err)
		}
		if cfg.SSHUsers, err = parseSSHUsers("--ssh-users-file", string(b)); err != nil {
			return cfg, err
		}
	case seen["--ssh-users-fd"]:
		b, err := readSecretFD(usersFD, "ssh-users")
		if err != nil {
			return cfg, fmt.Errorf("--ssh-users-fd: %w", err)
		}
		if cfg.SSHUsers, err = parseSSHUsers("--ssh-users-fd", string(b)); err != nil {
			return cfg, err
		}
	}
	if seen["--tenants"] {
		switch {
		case cfg.TenantsFile == "":
			return cfg, errors.New("--tenants must not be empty")
		case seen["--scopePath"]:
			return cfg, errors.New("--tenants and --scopePath are mutually exclusive: each tenant's scope is in the tenants file")
		case cfg.LocalOnly:
			return cfg, errors.New("--tenants needs the network daemon, not --local-only")
		}
	}
	if cfg.ScopePath != "" {
		s, err := daemon.NormalizeScopePath(cfg.ScopePath)
		if err != nil {
			return cfg, fmt.Errorf("--scopePath %q: %w", cfg.ScopePath, err)
		}
		cfg.ScopePath = s
	}
	if seen["--auth-token-file"] {
		if seen["--auth-token"] {
			return cfg, errors.New("--auth-token and --auth-token-file are mutually exclusive")
		}
		tok, err := readTokenFile(tokenFile)
		if err != nil {
			return cfg, fmt.Errorf("--auth-token-file: %w", err)
		}
		cfg.AuthToken = tok
	}
	if seen["--auth-token-fd"] {
		if seen["--auth-token"] || seen["--auth-token-file"] {
			return cfg, errors.New("--auth-token-fd excludes --auth-token and --auth-token-file")
		}
		tok, err := readTokenFD(tokenFD)
		if err != nil {
			return cfg, fmt.Errorf("--auth-token-fd: %w", err)
		}
		cfg.AuthToken = tok
	}
	if seen["--auth-token"] && cfg.AuthToken == "" {
		return cfg, errors.New("--auth-token must not be empty")
	}
	if cfg.AuthToken != "" {
		flag := "--auth-token"
		for _, f := range []string{"--auth-token-file", "--auth-token-fd"} {
			if seen[f] {
				flag = f
			}
		}
		if err := checkAuthToken(flag, cfg.AuthToken); err != nil {
			return cfg, err
		}
	}
	if cfg.ConventionalSSH && !cfg.AllowDefaultSSHPassword {
		for _, u := range cfg.SSHUsers {
			if u == defaultSSHUser {
				return cfg, errors.New("--conventional-ssh: the account root would have the published default password \"agents\" " +
					"(anyone who reaches the sshd port logs in as root); give accounts with --ssh-users-file (SSH_USERS in the image), " +
					"or pass --allow-default-ssh-password to accept it")
			}
		}
	}
	if seen["--acp-agents-file"] {
		data, err := os.ReadFile(agentsFile)
		if err != nil {
			return cfg, fmt.Errorf("--acp-agents-file: %w", err)
		}
		agents, err := acp.ParseAgentsJSON(data)
		if err != nil {
			return cfg, fmt.Errorf("--acp-agents-file %s: %w", agentsFile, err)
		}
		cfg.ACPAgents = agents
	}
	if seen["--log-level"] {
		if err := cfg.LogLevel.UnmarshalText([]byte(logLevel)); err != nil {
			return cfg, fmt.Errorf("--log-level: invalid level %q (valid: debug, info, warn, error)", logLevel)
		}
	}
	switch cfg.LogFormat {
	case "text", "json":
	case "":
		if !seen["--log-format"] {
			break
		}
		fallthrough
	default:
		return cfg, fmt.Errorf("--log-format: invalid format %q (valid: text, json)", cfg.LogFormat)
	}
	if seen["--audit-log"] && cfg.AuditLog == "" {
		return cfg, errors.New("--audit-log must name a file, or - for stdout")
	}
	if cfg.AuditLog == "-" && cfg.LocalOnly {
		return cfg, errors.New("--audit-log -: stdout carries MCP in --local-only mode")
	}
	for _, v := range agentFlags {
		a, err := acp.ParseAgentFlag(v)
		if err != nil {
			return cfg, fmt.Errorf("--acp-agent %q: %w", v, err)
		}
		cfg.ACPAgents = append(cfg.ACPAgents, a)
	}
	return cfg, nil
}

// readTokenFile reads a token file: surrounding whitespace (the final
// newline of `echo tok > f`) is dropped; an empty token is an error.
func readTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", unwrapPath(err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", errors.New("the file holds no token")
	}
	if strings.ContainsAny(tok, "\r\n") {
		return "", errors.New("the token must be a single line")
	}
	return tok, nil
}

// readTokenFD reads the token from an inherited descriptor (how the daemon
// hands its token to itself when it re-executes without it in argv).
func readTokenFD(s string) (string, error) {
	b, err := readSecretFD(s, "auth-token")
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", errors.New("no token")
	}
	return tok, nil
}

// readSecretFD reads and closes inherited descriptor s (at most 64 KiB).
func readSecretFD(s, name string) ([]byte, error) {
	fd, err := strconv.Atoi(s)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("invalid descriptor %q", s)
	}
	f := os.NewFile(uintptr(fd), name)
	if f == nil {
		return nil, fmt.Errorf("invalid descriptor %q", s)
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 64<<10))
}

// stdinUsers caches what --ssh-users-file - read: stdin can be read once,
// and the flags are parsed twice when the daemon re-executes itself.
var stdinUsers struct {
	once sync.Once
	r    io.Reader // os.Stdin unless a test sets it
	b    []byte
	err  error
}

// readUsersFile reads an --ssh-users-file: a path, or "-" for stdin.
func readUsersFile(path string) ([]byte, error) {
	if path != "-" {
		b, err := os.ReadFile(path)
		return b, unwrapPath(err)
	}
	stdinUsers.once.Do(func() {
		r := stdinUsers.r
		if r == nil {
			r = os.Stdin
		}
		stdinUsers.b, stdinUsers.err = io.ReadAll(io.LimitReader(r, 64<<10))
	})
	return stdinUsers.b, stdinUsers.err
}

// parseSSHUsers parses "user:pass[,user:pass...]" (in a file, newlines
// separate entries too, and blank lines and lines starting with "#" are
// skipped); an entry missing the user or the password is an error. The
// error never shows a password: entries are named by their number.
func parseSSHUsers(flag, s string) ([]sshUser, error) {
	var users []sshUser
	n := 0
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(line); flag != "--ssh-users" && (t == "" || strings.HasPrefix(t, "#")) {
			continue
		}
		for _, pair := range strings.Split(line, ",") {
			n++
			name, pass, ok := strings.Cut(pair, ":")
			name, pass = strings.TrimSpace(name), strings.TrimSpace(pass)
			switch {
			case !ok:
				return nil, fmt.Errorf("%s: invalid entry %d: expected user:pass", flag, n)
			case name == "":
				return nil, fmt.Errorf("%s: invalid entry %d: no user", flag, n)
			case pass == "":
				return nil, fmt.Errorf("%s: invalid entry %d (user %q): no password", flag, n, name)
			}
			users = append(users, sshUser{name, pass})
		}
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("%s: no user:pass entry", flag)
	}
	return users, nil
}

// count returns how many of names were seen.
func count(seen map[string]bool, names ...string) int {
	n := 0
	for _, name := range names {
		if seen[name] {
			n++
		}
	}
	return n
}
