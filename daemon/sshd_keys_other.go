//go:build !unix

package daemon

import "fmt"

// writeAuthorizedKeys is Unix-only, as conventional SSH is.
func writeAuthorizedKeys(string, int, int, []byte) error {
	return fmt.Errorf("%w: no authorized_keys on this system", ErrSSHDUnavailable)
}
