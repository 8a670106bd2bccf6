package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentbe/agent-backend/sftpjail"
)

// runSFTPServer implements `agent-backend sftp-server --rootDir DIR`: SFTP
// version 3 on stdin/stdout, jailed to DIR, usable as OpenSSH's
// `Subsystem sftp` command or with `sftp -D`. Diagnostics go to stderr
// only; stdout carries nothing but protocol.
func runSFTPServer(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sftp-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rootDir := fs.String("rootDir", "", "workspace root directory (required)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, sftpServerHelp)
			return 0
		}
		fmt.Fprintf(stderr, "agent-backend sftp-server: %v\nusage: agent-backend sftp-server --rootDir DIR\n", err)
		return 1
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agent-backend sftp-server: unexpected argument %q\nusage: agent-backend sftp-server --rootDir DIR\n", fs.Arg(0))
		return 1
	}
	if *rootDir == "" {
		fmt.Fprintln(stderr, "agent-backend sftp-server: --rootDir is required\nusage: agent-backend sftp-server --rootDir DIR")
		return 1
	}
	abs, err := filepath.Abs(*rootDir)
	if err != nil {
		fmt.Fprintf(stderr, "agent-backend sftp-server: --rootDir: %v\n", err)
		return 1
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		fmt.Fprintf(stderr, "agent-backend sftp-server: cannot open root directory %s: %v\n", abs, unwrapPath(err))
		return 1
	}
	defer root.Close()
	if err := sftpjail.Serve(sftpjail.Stream(stdin, stdout), root, &sftpjail.ServerOptions{RootPath: abs}); err != nil {
		fmt.Fprintf(stderr, "agent-backend sftp-server: %v\n", err)
		return 1
	}
	return 0
}

// sftpServerHelp is sftp-server --help.
const sftpServerHelp = `usage: agent-backend sftp-server --rootDir DIR

Speaks SFTP version 3 on stdin/stdout, confined to DIR: no path, "..", or
symbolic link reaches a file outside it, and set-user-ID/set-group-ID bits
are never set. Nothing but protocol goes to stdout; diagnostics go to stderr.

As OpenSSH's SFTP server for a user (sshd_config):

    Match User agent
        ForceCommand agent-backend sftp-server --rootDir /var/workspace

or for everyone:

    Subsystem sftp /usr/local/bin/agent-backend sftp-server --rootDir /var/workspace

Locally, without sshd:

    sftp -D "agent-backend sftp-server --rootDir /var/workspace"
`

// unwrapPath drops the path of a PathError (it is printed separately).
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
