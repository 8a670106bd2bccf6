package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/agentbe/agent-backend/internal/wsnet"
	"golang.org/x/crypto/ssh"
)

// serverVersion is the SSH identification string the daemon sends.
const serverVersion = "SSH-2.0-agentbe"

// sshConfig builds the per-connection server configuration: the WebSocket
// was authenticated already, so every SSH authentication method succeeds
// (a passthrough).
func sshConfig(signer ssh.Signer) *ssh.ServerConfig {
	cfg := &ssh.ServerConfig{
		NoClientAuth:  true,
		ServerVersion: serverVersion,
		PasswordCallback: func(ssh.ConnMetadata, []byte) (*ssh.Permissions, error) {
			return nil, nil
		},
		PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) {
			return nil, nil
		},
		KeyboardInteractiveCallback: func(ssh.ConnMetadata, ssh.KeyboardInteractiveChallenge) (*ssh.Permissions, error) {
			return nil, nil
		},
	}
	cfg.AddHostKey(signer)
	return cfg
}

// serveSSH runs one SSH server connection on c until either side ends it.
// The WebSocket is closed with 1000 when the SSH connection ends cleanly and
// 1011 when it fails (handshake error included). Everything the connection
// started (commands, SFTP sessions) is ended with it. Every channel works
// as cs says (channelPrincipal).
func (s *Server) serveSSH(parent context.Context, c *wsnet.ServerConn, cs *sshConnState) {
	signer, err := s.hostKey.get()
	if err != nil {
		c.CloseWith(wsnet.CloseInternal, "SSH host key unavailable")
		return
	}
	c.SetDeadline(time.Now().Add(s.cfg.SSHHandshakeTimeout))
	sc, chans, reqs, err := ssh.NewServerConn(countingConn{c, s.metrics.sshIn, s.metrics.sshOut}, sshConfig(signer))
	if err != nil {
		c.CloseWith(failureCode(c), "SSH handshake failed")
		return
	}
	c.SetDeadline(time.Time{})
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	go handleGlobalRequests(reqs)

	var wg sync.WaitGroup
	slots := make(chan struct{}, s.cfg.MaxChannelsPerConn)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "only session channels are supported")
			continue
		}
		// A tenant removed (or changed) since the upgrade opens nothing
		// new; what runs already goes on.
		p, ok := s.channelPrincipal(cs)
		if !ok {
			nc.Reject(ssh.Prohibited, "Unauthorized: the tenant of this connection is no longer valid")
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			nc.Reject(ssh.ResourceShortage, "too many channels on this connection")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			<-slots
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			s.serveSession(ctx, ch, chReqs, p)
		}()
	}
	// The connection is gone: end what it started, then close the socket.
	cancel()
	wg.Wait()
	err = sc.Wait()
	sc.Close()
	if err != nil && !isClosedErr(err) {
		c.CloseWith(failureCode(c), "SSH connection failed")
		return
	}
	c.CloseWith(wsnet.CloseNormal, "")
}

// failureCode is 1002 when the client broke the WebSocket framing rules,
// else 1011. It is read once the SSH layer has stopped reading.
func failureCode(c *wsnet.ServerConn) int {
	if c.BadFrame() {
		return wsnet.CloseProtocol
	}
	return wsnet.CloseInternal
}

// handleGlobalRequests answers keepalive@openssh.com (and any request that
// wants a reply) so clients' keepalives see the daemon alive; everything
// else is refused.
func handleGlobalRequests(reqs <-chan *ssh.Request) {
	for r := range reqs {
		if r.WantReply {
			r.Reply(r.Type == "keepalive@openssh.com", nil)
		}
	}
}

// isClosedErr reports whether the SSH connection ended normally: the peer
// closed the stream or sent a disconnect message.
func isClosedErr(err error) bool {
	return err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		strings.HasPrefix(err.Error(), "ssh: disconnect")
}
