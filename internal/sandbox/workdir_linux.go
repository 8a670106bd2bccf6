package sandbox

import (
	"os"
	"strconv"
)

// workDirPath names the open directory wd for exec.Cmd.Dir. On Linux it is
// /proc/self/fd/N: the child changes directory after fork, when it still
// holds a copy of every descriptor, so it lands in exactly the directory that
// was opened and validated, whatever was renamed or swapped for a link since.
// hostDir is what it would be called by name.
func workDirPath(wd *os.File, hostDir string) string {
	return "/proc/self/fd/" + strconv.FormatUint(uint64(wd.Fd()), 10)
}
