package fstools

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"testing"
	"unicode"
)

// TestUnicodeTablesPinned holds the generated tables to the Unicode version
// of the standard library's unicode package (the collation's letter, digit
// and case classes come from there, so both sides must agree), and to what
// the generator writes today: an edited table or a generator change not
// regenerated fails here.
func TestUnicodeTablesPinned(t *testing.T) {
	if unicodeTablesVersion != unicode.Version {
		t.Fatalf("tables are Unicode %s, the unicode package %s: regenerate (go generate ./internal/fstools) with a matching golang.org/x/text", unicodeTablesVersion, unicode.Version)
	}
	if testing.Short() {
		t.Skip("regenerating needs the generator module's dependencies")
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = "unicodegen"
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("unicodegen: %v", err)
	}
	if out, err = format.Source(out); err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("fs_unicode_tables.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, out) {
		t.Error("fs_unicode_tables.go differs from what unicodegen writes: run go generate ./internal/fstools")
	}
}
