//go:build !unix

package migrate

import "os"

// lockJournal does nothing where flock is missing.
func lockJournal(*os.File) error { return nil }
