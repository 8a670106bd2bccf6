package beneath

import "syscall"

// NoWait is or-ed into the flags of every open of a workspace entry.
//
// On a regular file or directory O_NONBLOCK changes nothing for the kernel,
// but os.File then skips its set-non-blocking-then-restore dance (four fcntl
// calls per open, a third of the system calls of a small read). On a FIFO
// or device planted in the workspace it is what we want anyway: opening
// never waits for the other end (a FIFO without a writer reads as empty, one
// without a reader refuses writes with ENXIO) instead of hanging the call.
const NoWait = syscall.O_NONBLOCK

// DirOnly makes an open fail unless the entry is a directory.
const DirOnly = syscall.O_DIRECTORY
