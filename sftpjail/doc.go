// Package sftpjail speaks SFTP version 3 (draft-ietf-secsh-filexfer-02, the
// version OpenSSH speaks) in both directions: a server confined to a
// workspace directory, and the client the remote backend uses.
//
// The server resolves every path with package internal/wspath (the
// project's three path cases, ".." escapes rejected) and performs every file
// access through an *os.Root, so neither ".." nor a symbolic link can lead
// out of the workspace. Paths are presented to the client as absolute paths
// from "/" relative to the workspace root; host paths never appear in
// replies or error messages.
//
// Where the specification leaves room, the server behaves as follows:
//   - A ".." that climbs above the root is PERMISSION_DENIED, also for
//     REALPATH (so `cd ..` at "/" fails instead of staying at "/").
//   - OPEN creates missing parent directories (0755) when CREAT is given;
//     a write without CREAT needs an existing file and creates nothing.
//     With APPEND every WRITE goes to the end of the file, whatever its
//     offset says, as OpenSSH's sftp-server does.
//   - RENAME fails when the destination exists (version 3, OpenSSH);
//     posix-rename@openssh.com replaces it. Both create the destination's
//     parent. The root can be neither end of a rename, nor removed.
//   - SYMLINK takes its arguments in OpenSSH's order (target, then link
//     path). An absolute target is a workspace path, stored relative to the
//     link; a link whose target would lead outside, lexically or through
//     the links that exist, is refused, and RENAME and hardlink refuse to
//     move a link to where it would. READLINK never shows a target outside.
//   - SETSTAT and FSETSTAT change size and permission bits (setuid, setgid
//     and sticky are dropped); time and owner changes ignore errors.
//   - READDIR reads lazily, 100 entries per reply, with `ls -l` long names
//     identical to OpenSSH's, and without "." and ".." (at the root ".."
//     would describe a directory outside).
//   - Errors: ENOENT is NO_SUCH_FILE, EACCES and escapes PERMISSION_DENIED,
//     everything else FAILURE; the message names the path as the client
//     gave it.
//
// The client pipelines reads and writes (up to 64 requests in flight, as
// OpenSSH's sftp does) so throughput is not bound by the round-trip time.
package sftpjail
