package daemon

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
)

// tokenCheck compares presented credentials with the configured token in
// constant time (over SHA-256 digests, so the token's length does not leak
// either).
type tokenCheck struct {
	enabled bool
	bearer  [32]byte // sha256("Bearer " + token)
	raw     [32]byte // sha256(token)
}

func newTokenCheck(token string) tokenCheck {
	if token == "" {
		return tokenCheck{}
	}
	return tokenCheck{enabled: true, bearer: sha256.Sum256([]byte("Bearer " + token)), raw: sha256.Sum256([]byte(token))}
}

// header reports whether r carries "Authorization: Bearer <token>" exactly
// (true when no token is configured).
func (t tokenCheck) header(r *http.Request) bool {
	if !t.enabled {
		return true
	}
	vals := r.Header.Values("Authorization")
	if len(vals) != 1 {
		return false
	}
	got := sha256.Sum256([]byte(vals[0]))
	return subtle.ConstantTimeCompare(got[:], t.bearer[:]) == 1
}

// query reports whether the ?token= query parameter equals the token.
func (t tokenCheck) query(r *http.Request) bool {
	if !t.enabled {
		return true
	}
	vals, ok := r.URL.Query()["token"]
	if !ok || len(vals) != 1 {
		return false
	}
	got := sha256.Sum256([]byte(vals[0]))
	return subtle.ConstantTimeCompare(got[:], t.raw[:]) == 1
}
