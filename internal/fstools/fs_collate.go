package fstools

import (
	"strings"
	"unicode"
)

// localeCompare orders names the way JavaScript's a.localeCompare(b) does
// under ICU's root/en-US collation, closely enough for file names: first by
// base characters (case and accents ignored; white space and punctuation
// before digits, digits before letters, "_" before "."), then by accents,
// then by case (lower before upper). Equal names return 0.
func localeCompare(a, b string) int {
	ka, kb := collationKey(a), collationKey(b)
	for level := 0; level < 3; level++ {
		if c := compareInts(ka[level], kb[level]); c != 0 {
			return c
		}
	}
	return 0
}

// punctOrder is the CLDR root order of ASCII white space, punctuation and
// symbols.
const punctOrder = "\t\n\v\f\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"

const (
	groupSpace  = 0x100
	groupOther  = 0x200    // other punctuation and symbols, by code point
	groupDigit  = 0x200000 // digits by value
	groupLetter = 0x300000 // letters by lower-case code point
)

// collationKey returns the primary, secondary and tertiary weights of s.
func collationKey(s string) [3][]int {
	var k [3][]int
	for _, r := range nfd(s) {
		if combiningClass(r) != 0 || unicode.Is(unicode.Mn, r) {
			// Accents only count at the secondary level.
			k[1] = append(k[1], int(r))
			continue
		}
		var p int
		switch {
		case r < 0x80 && strings.ContainsRune(punctOrder, r):
			p = groupSpace + strings.IndexRune(punctOrder, r)
		case unicode.IsDigit(r):
			p = groupDigit + int(digitValue(r))
		case unicode.IsLetter(r):
			p = groupLetter + int(unicode.ToLower(r))
		case unicode.IsSpace(r):
			p = groupSpace
		default:
			p = groupOther + int(r)
		}
		k[0] = append(k[0], p)
		k[1] = append(k[1], 0)
		caseW := 0
		if unicode.IsUpper(r) || unicode.IsTitle(r) {
			caseW = 1
		}
		k[2] = append(k[2], caseW)
	}
	return k
}

func digitValue(r rune) rune {
	// Unicode decimal digits come in contiguous runs of ten starting at 0.
	for d := rune(0); d < 10; d++ {
		if !unicode.IsDigit(r - d) {
			return d - 1
		}
	}
	return 9
}

func compareInts(a, b []int) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}
