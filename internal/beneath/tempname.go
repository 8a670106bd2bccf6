package beneath

import (
	"math/rand/v2"
	"path"
	"strconv"
	"strings"
)

// tempDigits is the length of TempName's random part: a uint64 in base 36,
// zero-padded.
const tempDigits = 13

// TempName returns a hidden sibling name for an atomic replacement of rel:
// ".<base>.<13 base-36 digits>.tmp", the exact form IsTempName recognises.
// The name need not be unpredictable: it is created with O_EXCL, which
// refuses any existing entry (a planted link included), and retried.
func TempName(rel string) string {
	dir, base := path.Split(rel)
	n := strconv.FormatUint(rand.Uint64(), 36)
	return dir + "." + base + "." + strings.Repeat("0", tempDigits-len(n)) + n + ".tmp"
}

// IsTempName reports whether name is one TempName makes:
// "." + base + "." + 13 digits of [0-9a-z] + ".tmp", base not empty.
func IsTempName(name string) bool {
	mid, ok := strings.CutSuffix(name, ".tmp")
	if !ok || len(mid) < 1+1+1+tempDigits || mid[0] != '.' || mid[len(mid)-tempDigits-1] != '.' {
		return false
	}
	for _, c := range []byte(mid[len(mid)-tempDigits:]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}
