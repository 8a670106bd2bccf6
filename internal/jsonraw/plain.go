package jsonraw

import "encoding/binary"

const (
	byteOnes  = 0x0101010101010101
	byteHighs = 0x8080808080808080
)

// PlainPrefix returns how many leading bytes of b a JSON string scanner
// can pass over: bytes that are not '"', '\\' or a control byte (below
// 0x20) and, when ascii is set, below 0x80. It tests eight bytes per step
// (the SWAR tests "has a zero byte" and "has a byte below n", both exact
// for the word as a whole); scanning the 4 KiB content of a write_file
// byte by byte, four times per request, was 15% of the daemon's CPU.
func PlainPrefix(b []byte, ascii bool) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ (byteOnes * '"')
		s := x ^ (byteOnes * '\\')
		special := (q - byteOnes) &^ q
		special |= (s - byteOnes) &^ s
		special |= (x - byteOnes*0x20) &^ x
		if ascii {
			special |= x
		}
		if special&byteHighs != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 || (ascii && c >= 0x80) {
			return i
		}
	}
	return i
}
