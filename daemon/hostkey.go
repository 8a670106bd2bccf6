package daemon

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/crypto/ssh"
)

// LoadOrCreateHostKey returns the SSH host key at path. When the file
// exists it is parsed (an unreadable or invalid file is an error). When it
// does not, an RSA-2048 key is generated, whatever the file's name (the
// default path ends in ssh_host_ed25519_key, as the reference daemon's
// does, yet holds an RSA key, as the reference's does), encoded as PKCS#1
// PEM and saved there with mode 0600, creating the directory (0700); if it
// cannot be saved, the key is still returned and a warning is logged on
// log: the key is then ephemeral, which is never fatal.
func LoadOrCreateHostKey(path string, log *slog.Logger) (ssh.Signer, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		signer, perr := ssh.ParsePrivateKey(data)
		if perr != nil {
			return nil, fmt.Errorf("daemon: host key %s: %w", path, perr)
		}
		return signer, nil
	}
	// ENOTDIR: a path component is a file, so there is no key there either.
	if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return nil, fmt.Errorf("daemon: host key: %w", err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("daemon: generate host key: %w", err)
	}
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := writeKeyFile(path, pemBytes); err != nil && log != nil {
		log.Warn("daemon: cannot save the generated SSH host key; using it in memory only (clients will see a new key after a restart)",
			"path", path, "err", err)
	}
	return ssh.NewSignerFromKey(key)
}

// writeKeyFile writes data to path atomically (temp file + rename) with
// mode 0600, never replacing a key that appeared meanwhile.
func writeKeyFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".hostkey-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// Link fails if path exists, so a concurrent writer's key is kept.
	return os.Link(tmp.Name(), path)
}

// hostKeyLoader loads the host key once, in the background.
type hostKeyLoader struct {
	done   chan struct{}
	signer ssh.Signer
	err    error
}

func loadHostKeyAsync(path string, log *slog.Logger) *hostKeyLoader {
	h := &hostKeyLoader{done: make(chan struct{})}
	go func() {
		defer close(h.done)
		h.signer, h.err = LoadOrCreateHostKey(path, log)
		if h.err != nil {
			log.Error("daemon: SSH host key unavailable; /ssh connections will fail", "err", h.err)
			return
		}
		pub := h.signer.PublicKey()
		log.Info("daemon: SSH host key (pin it in clients: agentbe.HostKeyFingerprint, or the known_hosts line of agent-backend hostkey)",
			"fingerprint", ssh.FingerprintSHA256(pub), "type", pub.Type(), "path", path)
	}()
	return h
}

// HostKey returns the public half of the daemon's SSH host key, waiting
// for it to be loaded or generated (see New) until ctx is done. It fails
// when the SSH-over-WebSocket endpoint is disabled or the key could not be
// loaded. Clients pin it, e.g. with agentbe.HostKeyFingerprint of
// ssh.FingerprintSHA256(key).
func (s *Server) HostKey(ctx context.Context) (ssh.PublicKey, error) {
	if s.hostKey == nil {
		return nil, errors.New("daemon: no SSH host key: the SSH-over-WebSocket endpoint is disabled")
	}
	select {
	case <-s.hostKey.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if s.hostKey.err != nil {
		return nil, s.hostKey.err
	}
	return s.hostKey.signer.PublicKey(), nil
}

func (h *hostKeyLoader) get() (ssh.Signer, error) {
	<-h.done
	return h.signer, h.err
}
