package agentbe_test

import (
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"

	agentbe "github.com/agentbe/agent-backend"
)

// Pin the daemon's host key by its fingerprint: the one the daemon logs at
// start ("fingerprint=SHA256:…"), or that `agent-backend hostkey --file
// KEYFILE` or `ssh-keygen -lf KEYFILE` print. Any other key is refused.
func ExampleHostKeyFingerprint() {
	pin, err := agentbe.HostKeyFingerprint("SHA256:vJG87StpVqHK9N/veqRsaI0jBij7bwuzN8cW2Gm41Rk")
	if err != nil {
		log.Fatal(err)
	}
	r, err := agentbe.NewRemote(agentbe.RemoteConfig{
		RootDir:         "/var/workspace",
		Host:            "10.0.0.5",
		Token:           os.Getenv("AGENTBE_TOKEN"),
		HostKeyCallback: pin,
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = r // r.Connect, r.Read, … fail with ErrHostKeyRefused against another key.

	// What the callback says of the pinned key and of another one.
	addr := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 3001}
	for _, line := range []string{
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPuGh5CaZuMvjKyDfzEJeKqpfHt+oCnHeeuP0GMvTwRa",
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPYC2RDrGXaWhlH5kuSHffQaZrQjk3+6kvRSN2/sZci/",
	} {
		key, _, _, _, _ := ssh.ParseAuthorizedKey([]byte(line))
		err := pin("10.0.0.5:3001", addr, key)
		fmt.Println(errors.Is(err, agentbe.ErrHostKeyRefused), err)
	}
	// Output:
	// false <nil>
	// true SSH host key refused: 10.0.0.5:3001 presented ssh-ed25519 SHA256:egSJBUsMYaM2NUJEn2eW0qzukmh7A/L5cKLhYqr8NSg, expected SHA256:vJG87StpVqHK9N/veqRsaI0jBij7bwuzN8cW2Gm41Rk (a man in the middle, or the daemon's key changed)
}

// Check the daemon's key against a known_hosts file, e.g. one holding what
// `agent-backend hostkey --file KEYFILE --host 10.0.0.5 --port 3001`
// printed. Over WebSocket the name looked up is "[Host]:Port" with the
// daemon's HTTP port (3001 unless RemoteConfig.Port says otherwise).
func ExampleHostKeyFromKnownHosts() {
	dir, _ := os.MkdirTemp("", "known-hosts-example")
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "known_hosts")
	os.WriteFile(file, []byte("# SHA256:vJG87StpVqHK9N/veqRsaI0jBij7bwuzN8cW2Gm41Rk\n"+
		"[10.0.0.5]:3001 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPuGh5CaZuMvjKyDfzEJeKqpfHt+oCnHeeuP0GMvTwRa\n"), 0o600)

	check, err := agentbe.HostKeyFromKnownHosts(file)
	if err != nil {
		log.Fatal(err)
	}
	r, err := agentbe.NewRemote(agentbe.RemoteConfig{RootDir: "/var/workspace", Host: "10.0.0.5",
		Token: os.Getenv("AGENTBE_TOKEN"), HostKeyCallback: check})
	if err != nil {
		log.Fatal(err)
	}
	_ = r

	addr := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 3001}
	key, _, _, _, _ := ssh.ParseAuthorizedKey([]byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPuGh5CaZuMvjKyDfzEJeKqpfHt+oCnHeeuP0GMvTwRa"))
	fmt.Println(check("10.0.0.5:3001", addr, key))
	fmt.Println(errors.Is(check("10.0.0.5:3002", addr, key), agentbe.ErrHostKeyRefused)) // another port, another name
	// Output:
	// <nil>
	// true
}
