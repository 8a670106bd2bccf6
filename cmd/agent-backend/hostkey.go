package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/agentbe/agent-backend/daemon"
)

const hostKeyUsage = `usage: agent-backend hostkey --file KEYFILE [--host NAME[,NAME...]] [--port N]

Prints the fingerprint of the daemon's SSH host key and a known_hosts line
for it, so that clients can pin the key:

  # SHA256:... (ssh-rsa, KEYFILE)
  [NAME]:PORT ssh-rsa AAAA...

The first line is a comment, so the whole output can be appended to a
known_hosts file. The fingerprint is what the daemon logs at start and what
ssh-keygen -lf prints; give it to agentbe.HostKeyFingerprint, or the file to
agentbe.HostKeyFromKnownHosts.

  --file KEYFILE  the daemon's --ssh-host-key (default path
                  ` + daemon.DefaultHostKeyPath + `, which holds an
                  RSA-2048 key despite its name), or its public key (.pub)
  --host NAMES    the names clients dial, comma-separated (default
                  localhost,127.0.0.1,::1)
  --port N        the port clients dial (default 3001, the daemon's HTTP port:
                  a Remote checks the key under "[Host]:Port"); with 22 the
                  names are written bare, as OpenSSH does. For OpenSSH through
                  ssh-proxy, give the name and port of the ssh command line
`

// runHostKey implements `agent-backend hostkey`.
func runHostKey(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hostkey", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	file := fs.String("file", "", "")
	hosts := fs.String("host", "localhost,127.0.0.1,::1", "")
	port := fs.Int("port", 3001, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, hostKeyUsage)
			return 0
		}
		fmt.Fprintf(stderr, "agent-backend hostkey: %v (see agent-backend hostkey --help)\n", err)
		return 1
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "agent-backend hostkey: "+format+"\n", a...)
		return 1
	}
	switch {
	case fs.NArg() > 0:
		return fail("unexpected argument %q", fs.Arg(0))
	case *file == "":
		return fail("--file is required (the daemon's --ssh-host-key, default %s)", daemon.DefaultHostKeyPath)
	case *port < 1 || *port > 65535:
		return fail("--port must be between 1 and 65535, got %d", *port)
	}
	var addrs []string
	for _, h := range strings.Split(*hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" || strings.ContainsAny(h, " \t\r\n#,[]") {
			return fail("--host: invalid name %q", h)
		}
		addrs = append(addrs, net.JoinHostPort(h, strconv.Itoa(*port)))
	}
	pub, err := readHostPublicKey(*file)
	if err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(stdout, "# %s (%s, %s)\n%s\n", ssh.FingerprintSHA256(pub), pub.Type(), *file, knownhosts.Line(addrs, pub))
	return 0
}

// readHostPublicKey returns the public key of a private key file (PEM or
// OpenSSH format; for an encrypted OpenSSH key, its clear public part) or
// of a public key file (authorized_keys format, as in a .pub file).
func readHostPublicKey(path string) (ssh.PublicKey, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no key at %s (the daemon creates its key at its first start)", path)
	}
	if err != nil {
		return nil, err
	}
	signer, err := ssh.ParsePrivateKey(data)
	if err == nil {
		return signer.PublicKey(), nil
	}
	var pm *ssh.PassphraseMissingError
	if errors.As(err, &pm) && pm.PublicKey != nil {
		return pm.PublicKey, nil
	}
	if pub, _, _, _, perr := ssh.ParseAuthorizedKey(data); perr == nil {
		return pub, nil
	}
	return nil, fmt.Errorf("%s is neither an SSH private key nor a public key: %v", path, err)
}
