//go:build linux

package daemon

import (
	"os"
	"runtime"
	"syscall"
	"testing"
)

// TestCheckWorkspaceReadOnly: a workspace root that cannot be written is
// not ready. As root (whom permissions do not stop) the directory is
// bound read-only in a private mount namespace of one locked thread; as
// another user it is made 0555.
func TestCheckWorkspaceReadOnly(t *testing.T) {
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dir, 0o755)
		err := checkWorkspace(dir)
		if err == nil || workspaceReason(err) != "the workspace root is not writable: permission denied" {
			t.Fatalf("%v (%s)", err, workspaceReason(err))
		}
		return
	}
	done := make(chan error, 1)
	go func() {
		// The thread is never unlocked: it ends with the goroutine, and its
		// mount namespace with it.
		runtime.LockOSThread()
		if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
			done <- err
			return
		}
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
			done <- err
			return
		}
		if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
			done <- err
			return
		}
		if err := syscall.Mount("", dir, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			done <- err
			return
		}
		done <- checkWorkspace(dir)
	}()
	err := <-done
	if err == nil || workspaceReason(err) != "the workspace root is not writable: read-only file system" {
		t.Fatalf("%v (%s)", err, workspaceReason(err))
	}
	if err := checkWorkspace(dir); err != nil {
		t.Errorf("outside the namespace: %v", err)
	}
}
