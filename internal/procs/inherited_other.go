//go:build !unix

package procs

// CloseInheritedOnExec does nothing where descriptors are not inherited
// the Unix way; see inherited_unix.go.
func CloseInheritedOnExec() int { return 0 }
