package fstools

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestFileURLMatchesNodeForEveryByte compares fileURL with Node's
// url.pathToFileURL for a name holding each of the 256 code points
// U+0000..U+00FF (testdata/fileurl_node.json, recorded from Node 20.20 by
// the command in its "note"), and checks that a raw byte >= 0x80 that is not
// valid UTF-8 is encoded on its own.
func TestFileURLMatchesNodeForEveryByte(t *testing.T) {
	raw, err := os.ReadFile("testdata/fileurl_node.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Hrefs []string `json:"hrefs"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	if len(golden.Hrefs) != 256 {
		t.Fatalf("golden has %d entries, want 256", len(golden.Hrefs))
	}
	for c := 0; c < 256; c++ {
		p := "/w/x" + string(rune(c)) + "y"
		if c == '/' {
			// Node resolves the path first; "/w/x/y" is already resolved.
			p = "/w/x/y"
		}
		if got := fileURL(p); got != golden.Hrefs[c] {
			t.Errorf("U+%04X: fileURL = %q, Node gives %q", c, got, golden.Hrefs[c])
		}
		if c >= 0x80 {
			want := fmt.Sprintf("file:///w/x%%%02Xy", c)
			if got := fileURL("/w/x" + string([]byte{byte(c)}) + "y"); got != want {
				t.Errorf("raw byte %#x: fileURL = %q, want %q", c, got, want)
			}
		}
	}
	if got := fileURL("/w/" + strings.Repeat("é", 3)); got != "file:///w/%C3%A9%C3%A9%C3%A9" {
		t.Errorf("multi-byte: %q", got)
	}
}
