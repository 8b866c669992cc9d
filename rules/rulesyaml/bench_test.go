package rulesyaml_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-go/ratelimit/rules"
	"github.com/sluice-go/ratelimit/rules/rulesyaml"
)

// BenchmarkLoad parses and compiles YAML files of n policies and n rules: the time per byte
// stays about the same as n grows.
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		var f strings.Builder
		f.WriteString("policies:\n")
		for i := range n {
			fmt.Fprintf(&f, "  p%d: {limits: [%d/min], key: user}\n", i, i+1)
		}
		f.WriteString("rules:\n")
		for i := range n {
			fmt.Fprintf(&f, "  - {match: {route: GET /r/%d}, policy: p%d}\n", i, i)
		}
		data := []byte(f.String())
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				doc, err := rulesyaml.Parse("big.yaml", data)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := rules.Compile(doc, registry); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
