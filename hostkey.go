package agentbe

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// ErrHostKeyRefused is wrapped by the error of a connection whose SSH host
// key was refused: by a callback of HostKeyFromKnownHosts or
// HostKeyFingerprint, or by any RemoteConfig.HostKeyCallback (a Remote wraps
// its errors). A Remote does not retry such a connection: the key will not
// change by itself, and it may be a man in the middle.
var ErrHostKeyRefused = errors.New("SSH host key refused")

// ErrNoHostKeyCallback is wrapped (with ErrInvalidConfig) by the error of
// NewRemote for a RemoteConfig without a HostKeyCallback.
var ErrNoHostKeyCallback = errors.New("RemoteConfig.HostKeyCallback is nil")

// noHostKeyHelp is what NewRemote says when HostKeyCallback is nil.
const noHostKeyHelp = "HostKeyCallback is required: pin the daemon's host key with " +
	"agentbe.HostKeyFingerprint(\"SHA256:...\") (the daemon logs its fingerprint at start; " +
	"`agent-backend hostkey --file KEYFILE` prints it) or agentbe.HostKeyFromKnownHosts(file), " +
	"or accept any key explicitly with ssh.InsecureIgnoreHostKey()"

// HostKeyFingerprint returns a host key callback that accepts exactly the
// keys with the given SHA-256 fingerprints, written as OpenSSH prints them
// ("SHA256:" and the unpadded base64 of the digest, e.g. from
// `ssh-keygen -lf KEYFILE`, the daemon's start-up log or
// `agent-backend hostkey`). Several fingerprints allow a key rotation. Any
// other key is refused with an error wrapping ErrHostKeyRefused that names
// the key presented and the ones expected. A malformed fingerprint (an MD5
// one included) is an error wrapping ErrInvalidConfig.
func HostKeyFingerprint(fingerprints ...string) (ssh.HostKeyCallback, error) {
	if len(fingerprints) == 0 {
		return nil, configErr("HostKeyFingerprint needs at least one fingerprint", nil)
	}
	want := make(map[string]bool, len(fingerprints))
	for _, fp := range fingerprints {
		norm, err := parseFingerprint(fp)
		if err != nil {
			return nil, configErr(err.Error(), nil)
		}
		want[norm] = true
	}
	list := strings.Join(fingerprints, ", ")
	return func(host string, _ net.Addr, key ssh.PublicKey) error {
		got := ssh.FingerprintSHA256(key)
		if want[got] {
			return nil
		}
		return fmt.Errorf("%w: %s presented %s %s, expected %s (a man in the middle, or the daemon's key changed)",
			ErrHostKeyRefused, host, key.Type(), got, list)
	}, nil
}

// parseFingerprint checks an OpenSSH SHA-256 fingerprint and returns it in
// ssh.FingerprintSHA256's form (padding removed).
func parseFingerprint(fp string) (string, error) {
	b64, ok := strings.CutPrefix(strings.TrimSpace(fp), "SHA256:")
	if !ok {
		return "", fmt.Errorf("host key fingerprint %q: want the SHA256:... form OpenSSH prints (ssh-keygen -lf)", fp)
	}
	b64 = strings.TrimRight(b64, "=")
	sum, err := base64.RawStdEncoding.DecodeString(b64)
	if err != nil || len(sum) != 32 {
		return "", fmt.Errorf("host key fingerprint %q: not the base64 of a SHA-256 digest", fp)
	}
	return "SHA256:" + b64, nil
}

// HostKeyFromKnownHosts returns a host key callback that checks keys
// against OpenSSH known_hosts files (hashed names, wildcards, @revoked and
// @cert-authority lines included). The name checked is the address the
// client dials: for a Remote over WebSocket "[Host]:Port" with the daemon's
// HTTP port (3001 by default; a plain "Host" for port 22), for
// TransportSSH its Host and SSHPort. `agent-backend hostkey --file KEYFILE
// --host HOST --port PORT` prints such a line. A host that is absent, or
// present with another key, is refused with an error wrapping
// ErrHostKeyRefused; a file that cannot be read or parsed is an error
// wrapping ErrInvalidConfig.
func HostKeyFromKnownHosts(files ...string) (ssh.HostKeyCallback, error) {
	if len(files) == 0 {
		return nil, configErr("HostKeyFromKnownHosts needs at least one known_hosts file", nil)
	}
	check, err := knownhosts.New(files...)
	if err != nil {
		return nil, configErr("known_hosts", err)
	}
	names := strings.Join(files, ", ")
	return func(host string, remote net.Addr, key ssh.PublicKey) error {
		err := check(host, remote, key)
		if err == nil {
			return nil
		}
		got := ssh.FingerprintSHA256(key)
		var ke *knownhosts.KeyError
		var re *knownhosts.RevokedError
		switch {
		case errors.As(err, &re):
			return fmt.Errorf("%w: %s presented %s %s, revoked in %s:%d", ErrHostKeyRefused,
				host, key.Type(), got, re.Revoked.Filename, re.Revoked.Line)
		case errors.As(err, &ke) && len(ke.Want) == 0:
			return fmt.Errorf("%w: %s (%s %s) is not in %s; add the line `agent-backend hostkey --host H --port P` prints",
				ErrHostKeyRefused, knownhosts.Normalize(host), key.Type(), got, names)
		case errors.As(err, &ke):
			want := make([]string, len(ke.Want))
			for i, k := range ke.Want {
				want[i] = fmt.Sprintf("%s %s (%s:%d)", k.Key.Type(), ssh.FingerprintSHA256(k.Key), k.Filename, k.Line)
			}
			return fmt.Errorf("%w: %s presented %s %s, known_hosts has %s (a man in the middle, or the daemon's key changed)",
				ErrHostKeyRefused, knownhosts.Normalize(host), key.Type(), got, strings.Join(want, ", "))
		}
		return fmt.Errorf("%w: %w", ErrHostKeyRefused, err)
	}, nil
}
