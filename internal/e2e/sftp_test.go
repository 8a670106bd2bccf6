package e2e_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/agentbe/agent-backend/internal/wsnet"
	"github.com/agentbe/agent-backend/sftpjail"
)

// sftp opens an SFTP session of the daemon's whole workspace as a Remote
// does (SSH over the /ssh WebSocket, the "sftp" subsystem, a Remote's
// chunk size and requests in flight), for tests that compare Remote with a
// plain SFTP client. The session ends with the test.
func (d *testDaemon) sftp(t testing.TB) *sftpjail.Client {
	t.Helper()
	ctx := context.Background()
	h := http.Header{}
	if d.token != "" {
		h.Set("Authorization", "Bearer "+d.token)
	}
	ws, err := wsnet.Dial(ctx, "ws://"+d.addr+"/ssh", wsnet.DialConfig{Header: h})
	must(t, err)
	cc, chans, reqs, err := ssh.NewClientConn(ws, d.addr, &ssh.ClientConfig{User: "root",
		Auth: []ssh.AuthMethod{ssh.Password("agentbe")}, HostKeyCallback: d.pinned(t)})
	if err != nil {
		ws.Close()
		t.Fatal(err)
	}
	client := ssh.NewClient(cc, chans, reqs)
	t.Cleanup(func() { client.Close() })
	s, err := client.NewSession()
	must(t, err)
	w, err := s.StdinPipe()
	must(t, err)
	r, err := s.StdoutPipe()
	must(t, err)
	must(t, s.RequestSubsystem("sftp"))
	c, err := sftpjail.NewClientContext(ctx, sessionStream{r, w, s},
		&sftpjail.ClientOptions{ChunkSize: 128 << 10, MaxInFlight: 16})
	must(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// sessionStream is an SSH session's stdin and stdout as one stream.
type sessionStream struct {
	r io.Reader
	w io.WriteCloser
	s *ssh.Session
}

func (s sessionStream) Read(p []byte) (int, error)  { return s.r.Read(p) }
func (s sessionStream) Write(p []byte) (int, error) { return s.w.Write(p) }
func (s sessionStream) Close() error {
	s.w.Close()
	return s.s.Close()
}
