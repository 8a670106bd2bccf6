//go:build unix

package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// secretEnvNames are the variables that carry the daemon's secrets in
// deployments (the Docker layer's convention).
var secretEnvNames = []string{"AUTH_TOKEN", "AGENTBE_AUTH_TOKEN", "SSH_USERS"}

// hideSecrets re-executes the full daemon without its token in argv or the
// environment, when either holds it: /proc/PID/cmdline and
// /proc/PID/environ of the daemon are readable by every process of the
// same user, commands run in software or none isolation included, and
// unsetting a variable in Go does not change them. The token is handed to
// the new image through an inherited pipe (--auth-token-fd); the process
// keeps its PID (PID 1 in a container stays PID 1). It returns only when
// nothing needs hiding or the re-exec failed (the daemon then runs as is).
func hideSecrets(args []string) {
	if len(args) < 2 || args[1] != "daemon" {
		return
	}
	for _, a := range args {
		if a == "--auth-token-fd" || strings.HasPrefix(a, "--auth-token-fd=") {
			return // already re-executed (and parsing would consume the descriptor)
		}
	}
	cfg, err := parseDaemonFlags(args[2:])
	if err != nil || cfg.LocalOnly || cfg.AuthToken == "" {
		return
	}
	newArgs, inArgs := stripTokenArgs(args)
	newEnv, inEnv := stripSecretEnv(os.Environ(), cfg.AuthToken)
	if !inArgs && !inEnv {
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	defer r.Close()
	if _, err := w.WriteString(cfg.AuthToken); err != nil {
		w.Close()
		return
	}
	w.Close()
	fd := r.Fd()
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETFD, 0); errno != 0 {
		return
	}
	if inArgs {
		newArgs = append(newArgs, "--auth-token-fd", strconv.Itoa(int(fd)))
	} else {
		// The token came from a file; only the environment needs cleaning.
		newArgs = args
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	syscall.Exec(exe, newArgs, newEnv)
}

// stripTokenArgs removes --auth-token VALUE / --auth-token=VALUE.
func stripTokenArgs(args []string) ([]string, bool) {
	out := make([]string, 0, len(args))
	found := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--auth-token" && i+1 < len(args):
			found = true
			i++
		case strings.HasPrefix(a, "--auth-token="):
			found = true
		default:
			out = append(out, a)
		}
	}
	return out, found
}

// stripSecretEnv drops the secret variables and any variable whose value
// is the token.
func stripSecretEnv(env []string, token string) ([]string, bool) {
	out := make([]string, 0, len(env))
	found := false
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		secret := v == token
		for _, n := range secretEnvNames {
			secret = secret || k == n
		}
		if secret {
			found = true
			continue
		}
		out = append(out, kv)
	}
	return out, found
}
