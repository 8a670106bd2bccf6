package agentbe

import (
	"strings"
	"testing"
)

// BenchmarkCheckCommand measures the safety check on 1 KiB commands: plain
// agent commands, and a heredoc whose body is stripped.
func BenchmarkCheckCommand(b *testing.B) {
	var plain strings.Builder
	for plain.Len() < 1024 {
		plain.WriteString("npm run build && go test ./... 2>&1 | grep -v '^ok' ; ls -la src | head -20 ; ")
	}
	var mixed strings.Builder
	for mixed.Len() < 1024 {
		mixed.WriteString("rm -rf build dist; cp -r src out; chmod 755 run.sh; kill 1234; curl -s localhost:8080 | jq . > o.json; ")
	}
	var doc strings.Builder
	doc.WriteString("cat > notes.md <<'EOF'\n")
	for doc.Len() < 1020 {
		doc.WriteString("Some notes: rm -rf / is dangerous, so is sudo.\n")
	}
	doc.WriteString("EOF\n")
	for _, c := range []struct{ name, cmd string }{
		{"plain-1KiB", plain.String()[:1024]},
		{"mixed-1KiB", mixed.String()[:1024]},
		{"heredoc-1KiB", doc.String()},
		{"short", "git status && git diff"},
	} {
		b.Run(c.name, func(b *testing.B) {
			if err := CheckCommand(c.cmd, SafetyPolicy{}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(c.cmd)))
			for b.Loop() {
				_ = CheckCommand(c.cmd, SafetyPolicy{})
			}
		})
	}
}
