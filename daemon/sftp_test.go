package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSFTPRootRefusesLinkedScope: under a static scope, the SFTP server's
// root is created and opened without following a link; a scope planted as
// a link to a canary (or through one) is refused, and nothing is created
// in the canary.
func TestSFTPRootRefusesLinkedScope(t *testing.T) {
	for _, tc := range []struct {
		name, scope string
		plant       func(ws, canary string)
	}{
		{"scope is a link", "tenant", func(ws, canary string) { os.Symlink(canary, filepath.Join(ws, "tenant")) }},
		{"parent is a link", "t/inner", func(ws, canary string) { os.Symlink(canary, filepath.Join(ws, "t")) }},
		{"link to a sibling", "tenants/a", func(ws, canary string) {
			os.MkdirAll(filepath.Join(ws, "tenants", "b"), 0o755)
			os.Symlink("b", filepath.Join(ws, "tenants", "a"))
		}},
		{"scope is a file", "tenant", func(ws, canary string) { os.WriteFile(filepath.Join(ws, "tenant"), nil, 0o644) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, canary := t.TempDir(), t.TempDir()
			tc.plant(ws, canary)
			s, err := New(Config{RootDir: ws, ScopePath: tc.scope, SSHHostKeyPath: testKeyPath(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			root, _, err := s.openSFTPRoot()
			if err == nil {
				root.Close()
			}
			if !errors.Is(err, errScopeLink) {
				t.Errorf("err = %v, want errScopeLink", err)
			}
			if ents, _ := os.ReadDir(canary); len(ents) != 0 {
				t.Errorf("canary changed: %v", ents)
			}
			if ents, _ := os.ReadDir(filepath.Join(ws, "tenants", "b")); len(ents) != 0 {
				t.Errorf("sibling changed: %v", ents)
			}
		})
	}
	ws := t.TempDir()
	s, err := New(Config{RootDir: ws, ScopePath: "a/b", SSHHostKeyPath: testKeyPath(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	root, host, err := s.openSFTPRoot()
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if fi, err := os.Stat(filepath.Join(ws, "a", "b")); err != nil || !fi.IsDir() || filepath.Base(host) != "b" {
		t.Fatalf("scope not created: %v, host %q", err, host)
	}
}
