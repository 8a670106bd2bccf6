// Package gentree writes a reproducible source-code-like tree for the grep
// benchmarks: directories of Go-ish files made from a fixed vocabulary by a
// seeded generator, plus a git repository marker and a .gitignore so the
// ignore rules are exercised. Not part of the product.
package gentree

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

var words = strings.Fields(`ctx err ok id name value result config buf data req resp client server
	handler conn path file dir root user token key cache index count size limit offset items list
	node tree state opts mode line text body header status code message entry record batch queue`)

var types = strings.Fields(`string int int64 bool error []byte time.Duration *Config context.Context map[string]int`)

var funcs = strings.Fields(`Open Close Read Write Parse Format Load Store Find Search Walk Run Start Stop
	Handle Serve Dial Accept Encode Decode Validate Resolve Compile Match Split Join Merge Apply`)

// Generate writes files files under dir (which must not exist or be empty)
// and returns the bytes written. The same seed gives the same tree.
func Generate(dir string, files int, seed uint64) (int64, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.tmp\nbuild/\n/vendor/\n"), 0o644); err != nil {
		return 0, err
	}
	var total int64
	var b strings.Builder
	perDir := 100
	for i := 0; i < files; i++ {
		d := filepath.Join(dir, fmt.Sprintf("pkg%02d", i/(perDir*50)), fmt.Sprintf("mod%02d", (i/perDir)%50))
		if i%perDir == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return total, err
			}
		}
		b.Reset()
		genFile(rng, &b, i)
		name := fmt.Sprintf("f%03d.go", i%perDir)
		if i%97 == 0 {
			name = fmt.Sprintf("f%03d.tmp", i%perDir)
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(b.String()), 0o644); err != nil {
			return total, err
		}
		total += int64(b.Len())
	}
	return total, nil
}

func genFile(rng *rand.Rand, b *strings.Builder, n int) {
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	fmt.Fprintf(b, "package mod%d\n\nimport (\n\t\"context\"\n\t\"errors\"\n)\n\n", n%50)
	funcsN := 2 + rng.IntN(10)
	for f := 0; f < funcsN; f++ {
		name := pick(funcs) + strings.ToUpper(pick(words)[:1]) + pick(words)[1:]
		fmt.Fprintf(b, "// %s %s the %s of the %s.\n", name, strings.ToLower(pick(funcs))+"s", pick(words), pick(words))
		fmt.Fprintf(b, "func %s(ctx context.Context, %s %s) (%s, error) {\n", name, pick(words), pick(types), pick(types))
		lines := 3 + rng.IntN(12)
		for l := 0; l < lines; l++ {
			switch rng.IntN(8) {
			case 0:
				fmt.Fprintf(b, "\tif %s == nil {\n\t\treturn %s, errors.New(\"%s %s\")\n\t}\n", pick(words), pick(words), pick(words), pick(words))
			case 1:
				fmt.Fprintf(b, "\t%s := %s(%s, %d)\n", pick(words), pick(funcs), pick(words), rng.IntN(1000))
			case 2:
				fmt.Fprintf(b, "\tfor _, %s := range %s {\n\t\t%s += len(%s)\n\t}\n", pick(words), pick(words), pick(words), pick(words))
			case 3:
				if rng.IntN(50) == 0 {
					b.WriteString("\treturn nil, ErrTimeout\n")
				} else {
					fmt.Fprintf(b, "\t%s.%s = %s\n", pick(words), pick(funcs), pick(words))
				}
			default:
				fmt.Fprintf(b, "\t%s, err := %s.%s(ctx, %s)\n\tif err != nil {\n\t\treturn %s, err\n\t}\n", pick(words), pick(words), pick(funcs), pick(words), pick(words))
			}
		}
		fmt.Fprintf(b, "\treturn %s, nil\n}\n\n", pick(words))
	}
}
