package main

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// secretEnvNames are the variables that carry the daemon's secrets in
// deployments (the Docker layer's convention).
var secretEnvNames = []string{"AUTH_TOKEN", "AGENTBE_AUTH_TOKEN", "SSH_USERS"}

// hideSecrets re-executes the full daemon without its secrets (the token,
// the --ssh-users passwords) in argv or the environment, when either holds
// one, or when they came on stdin (--ssh-users-file -), which the new image
// could not read again: /proc/PID/cmdline and /proc/PID/environ of the
// daemon are readable by every process of the same user (ps shows argv to
// everyone), commands run in software or none isolation included, and
// unsetting a variable in Go does not change them. The secrets are handed
// to the new image through inherited pipes (--auth-token-fd,
// --ssh-users-fd); the process keeps its PID (PID 1 in a container stays
// PID 1). It returns only when nothing needs hiding or the re-exec failed
// (the daemon then runs as is).
func hideSecrets(args []string) {
	if len(args) < 2 || args[1] != "daemon" {
		return
	}
	for _, a := range args {
		for _, f := range []string{"--auth-token-fd", "--ssh-users-fd"} {
			if a == f || strings.HasPrefix(a, f+"=") {
				return // already re-executed (and parsing would consume the descriptor)
			}
		}
	}
	cfg, err := parseDaemonFlags(args[2:])
	if err != nil || cfg.LocalOnly {
		return
	}
	var secrets []string
	if cfg.AuthToken != "" {
		secrets = append(secrets, cfg.AuthToken)
	}
	if usersArg := flagValue(args, "--ssh-users"); usersArg != "" {
		secrets = append(secrets, usersArg)
	}
	if flagValue(args, "--ssh-users") != "" || flagValue(args, "--ssh-users-file") != "" {
		for _, u := range cfg.SSHUsers {
			secrets = append(secrets, u.Password)
		}
	}
	newArgs, tokenInArgs := stripFlag(args, "--auth-token")
	newArgs, usersInArgs := stripFlag(newArgs, "--ssh-users")
	usersOnStdin := flagValue(args, "--ssh-users-file") == "-"
	if usersOnStdin {
		newArgs, _ = stripFlag(newArgs, "--ssh-users-file")
	}
	newEnv, inEnv := stripSecretEnv(os.Environ(), secrets...)
	if !tokenInArgs && !usersInArgs && !usersOnStdin && !inEnv {
		return
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if tokenInArgs {
		fd, ok := secretPipe(cfg.AuthToken, &files)
		if !ok {
			return
		}
		newArgs = append(newArgs, "--auth-token-fd", fd)
	}
	if usersInArgs || usersOnStdin {
		var b strings.Builder
		for _, u := range cfg.SSHUsers {
			b.WriteString(u.Name + ":" + u.Password + "\n")
		}
		fd, ok := secretPipe(b.String(), &files)
		if !ok {
			return
		}
		newArgs = append(newArgs, "--ssh-users-fd", fd)
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	syscall.Exec(exe, newArgs, newEnv)
}

// secretPipe returns the number of an inheritable descriptor from which
// the new image reads secret, and adds it to files.
func secretPipe(secret string, files *[]*os.File) (string, bool) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", false
	}
	*files = append(*files, r)
	_, err = w.WriteString(secret) // fits the pipe: flags hold at most 64 KiB
	w.Close()
	if err != nil {
		return "", false
	}
	fd := r.Fd()
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETFD, 0); errno != 0 {
		return "", false
	}
	return strconv.Itoa(int(fd)), true
}

// flagValue returns the last value of flag in args ("--flag V" or
// "--flag=V").
func flagValue(args []string, flag string) string {
	v := ""
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == flag && i+1 < len(args):
			v = args[i+1]
			i++
		case strings.HasPrefix(args[i], flag+"="):
			v = strings.TrimPrefix(args[i], flag+"=")
		}
	}
	return v
}

// stripFlag removes flag VALUE / flag=VALUE from args.
func stripFlag(args []string, flag string) ([]string, bool) {
	out := make([]string, 0, len(args))
	found := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == flag && i+1 < len(args):
			found = true
			i++
		case strings.HasPrefix(a, flag+"="):
			found = true
		default:
			out = append(out, a)
		}
	}
	return out, found
}

// stripSecretEnv drops the secret variables and any variable whose value
// is one of the secrets.
func stripSecretEnv(env []string, secrets ...string) ([]string, bool) {
	out := make([]string, 0, len(env))
	found := false
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		secret := v != "" && slices.Contains(secrets, v) || slices.Contains(secretEnvNames, k)
		if secret {
			found = true
			continue
		}
		out = append(out, kv)
	}
	return out, found
}
