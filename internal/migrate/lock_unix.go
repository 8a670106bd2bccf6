//go:build unix

package migrate

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockJournal takes an exclusive lock on the journal for the life of f, so
// that two migrations never share one.
func lockJournal(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrJournalBusy
	}
	return err
}
