package procs

import "testing"

func TestSplitTruncated(t *testing.T) {
	b := &CapBuffer{Max: 4}
	b.Write([]byte("abcdefgh"))
	out, total := SplitTruncated(b.Result())
	if string(out) != "abcd" || total != 8 {
		t.Errorf("split = %q, %d", out, total)
	}
	for _, s := range []string{
		"plain",
		"",
		"abcd\n\n... [Output truncated. Full output was 8 bytes, showing first 3]",   // does not match what it holds
		"abcd\n\n... [Output truncated. Full output was 2 bytes, showing first 4]",   // total below shown
		"abcd\n\n... [Output truncated. Full output was 8 bytes, showing first 4]x",  // not at the end
		"abcd\n\n... [Output truncated. Full output was +8 bytes, showing first 4]",  // not as written
		"abcd\n\n... [Output truncated. Full output was 08 bytes, showing first 04]", // not as written
	} {
		if out, total := SplitTruncated([]byte(s)); string(out) != s || total != 0 {
			t.Errorf("SplitTruncated(%q) = %q, %d", s, out, total)
		}
	}
}
