package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/daemon"
	"github.com/agentbe/agent-backend/internal/procs"
)

// revision is the VCS revision /health reports when the binary recorded
// none (the image is built without .git): the Dockerfile sets it with
// -ldflags "-X main.revision=…".
var revision string

// runFullDaemon serves the workspace over HTTP and SSH-over-WebSocket (and
// sshd with --conventional-ssh) until ctx is done (SIGTERM/SIGINT), then
// shuts down gracefully and exits 0.
func runFullDaemon(ctx context.Context, cfg daemonConfig, stdout, stderr io.Writer) int {
	daemon.StripSecretEnv(cfg.AuthToken)
	procs.LeaveOneCore()
	logw := newBufferedLog(stderr)
	defer logw.Close()
	log := newLogger(logw, cfg)
	// What the library and the standard log package log goes through the
	// same handler: one daemon writes one format.
	slog.SetDefault(log)
	audit, closeAudit, err := openAuditLog(cfg.AuditLog, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "agent-backend daemon: --audit-log: %v\n", err)
		return 1
	}
	defer closeAudit()
	dc := daemon.Config{
		RootDir:        cfg.RootDir,
		ScopePath:      cfg.ScopePath,
		Isolation:      agentbe.Isolation(cfg.Isolation),
		Shell:          agentbe.Shell(cfg.Shell),
		Host:           cfg.Host,
		Port:           cfg.Port,
		AuthToken:      cfg.AuthToken,
		DisableSSHWS:   cfg.DisableSSHWS,
		SSHHostKeyPath: cfg.SSHHostKey,
		ACPAgents:      cfg.ACPAgents,
		Version:        version,
		Revision:       revision,
		Logger:         log,
		AuditLog:       audit,

		MaxSSHConns:        cfg.MaxSSHConns,
		MaxInFlight:        cfg.MaxInFlight,
		MaxACPInstances:    cfg.MaxACPInstances,
		MaxChannelsPerConn: cfg.MaxChannelsPerConn,
		MaxUploads:         cfg.MaxUploads,
		TenantsFile:        cfg.TenantsFile,

		ExecLimits:  cfg.ExecLimits,
		ExecNetwork: cfg.ExecNetwork,
	}
	if cfg.ConventionalSSH {
		dc.Conventional = sshdConfig(cfg, log)
	}
	if err := daemon.Run(ctx, dc); err != nil {
		fmt.Fprintf(stderr, "agent-backend daemon: %v\n", err)
		return 1
	}
	return 0
}

// sshdConfig is the conventional sshd's configuration from the flags. It
// warns when an account has the well-known default password (root:agents,
// what --ssh-users defaults to): anyone who reaches sshd's port can log in.
func sshdConfig(cfg daemonConfig, log *slog.Logger) *daemon.SSHDConfig {
	sc := &daemon.SSHDConfig{Port: cfg.SSHPort, PublicKey: cfg.SSHPublicKey, AuthorizedKeysFile: cfg.SSHAuthorizedKeys}
	for _, u := range cfg.SSHUsers {
		if u == defaultSSHUser {
			log.Warn("daemon: --conventional-ssh sets the password of root to the published default \"agents\": anyone who reaches the sshd port can log in as root; give accounts with --ssh-users-file",
				"ssh-port", cfg.SSHPort)
		}
		sc.Users = append(sc.Users, daemon.SSHUser{Name: u.Name, Password: u.Password})
	}
	return sc
}

// newLogger is the daemon's logger on w: logfmt text (--log-format text)
// or one JSON object per line (json), at --log-level.
func newLogger(w io.Writer, cfg daemonConfig) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openAuditLog opens --audit-log: nil for "", stdout for "-", else the
// file, created 0600 if missing and appended to (rotate it by renaming and
// restarting the daemon). close closes the file once the daemon has
// flushed its last records.
func openAuditLog(name string, stdout io.Writer) (io.Writer, func(), error) {
	switch name {
	case "":
		return nil, func() {}, nil
	case "-":
		return stdout, func() {}, nil
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, unwrapPath(err)
	}
	return f, func() { f.Close() }, nil
}
