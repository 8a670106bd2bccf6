// Package beneath holds the kernel-confined fast paths of a workspace's
// file operations: one openat2 call with RESOLVE_BENEATH instead of
// os.Root's walk of a path (an openat and a close per directory on the way),
// plain system calls instead of *os.File set-ups, and getdents with the
// kernel's entry types instead of an lstat per entry.
//
// Contract: Open, ReadFile and Write answer only their common case. When
// one reports ok (or handled) false, nothing happened: nothing was opened,
// created, changed or decided, and the caller takes the os.Root path,
// which gives the exact answer and words the error. A false answer is
// always safe; only a true one must be right, and the kernel keeps every
// resolution below the directory it started from (no "..", absolute path
// or symbolic link leads out, no /proc-style magic link is followed).
// Without openat2 (an old kernel, a container's seccomp profile, another
// system) they always decline.
//
// ReadDir is the exception: it always answers, for an open directory the
// caller already resolved. TempName and IsTempName are the one rule for
// the temporary siblings of atomic writes, which both paths create.
//
// The package builds on Linux and macOS (where every fast path declines).
package beneath
