package procs

import (
	"bytes"
	"fmt"
)

// CapBuffer collects output up to Max bytes (0: unlimited) and counts the
// rest, so a chatty command cannot exhaust memory. It deliberately has no
// ReadFrom, so io.Copy goes through Write and the cap. Write never fails.
type CapBuffer struct {
	Max   int
	buf   bytes.Buffer
	total int64
}

func (c *CapBuffer) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if c.Max > 0 {
		room := c.Max - c.buf.Len()
		if room <= 0 {
			return len(p), nil
		}
		if len(p) > room {
			c.buf.Write(p[:room])
			return len(p), nil
		}
	}
	return c.buf.Write(p)
}

// Bytes returns what was kept, without a note.
func (c *CapBuffer) Bytes() []byte { return c.buf.Bytes() }

// String returns what was kept, without a note.
func (c *CapBuffer) String() string { return c.buf.String() }

// Result returns the collected output, with a note when it was truncated
// (see SplitTruncated).
func (c *CapBuffer) Result() []byte {
	if c.Max > 0 && c.total > int64(c.buf.Len()) {
		fmt.Fprintf(&c.buf, truncatedFormat, c.total, c.Max)
	}
	return c.buf.Bytes()
}

// truncatedFormat is the note Result appends to truncated output.
const truncatedFormat = "\n\n... [Output truncated. Full output was %d bytes, showing first %d]"

// SplitTruncated takes Result's note off out: it returns the output kept
// and the full length the note gives, or out and 0 when out does not end
// with a note that matches what it holds.
func SplitTruncated(out []byte) ([]byte, int64) {
	const lead = "\n\n... [Output truncated. Full output was "
	i := bytes.LastIndex(out, []byte(lead))
	if i < 0 || out[len(out)-1] != ']' {
		return out, 0
	}
	var total int64
	var shown int
	if n, err := fmt.Sscanf(string(out[i:]), truncatedFormat, &total, &shown); err != nil || n != 2 ||
		shown != i || total <= int64(shown) || fmt.Sprintf(truncatedFormat, total, shown) != string(out[i:]) {
		return out, 0
	}
	return out[:i], total
}
