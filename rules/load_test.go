package rules

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigFile is a rules file of n policies and n rules, one a line: policy i is at line 3+i,
// rule i at line 3+n+2+i.
func bigFile(n int) []byte {
	var b strings.Builder
	b.WriteString("{\n\"policies\": {\n")
	for i := range n {
		sep := ","
		if i == n-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "  \"p%d\": {\"limits\": [\"%d/min\"], \"key\": \"user\"}%s\n", i, i+1, sep)
	}
	b.WriteString("},\n\"rules\": [\n")
	for i := range n {
		sep := ","
		if i == n-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "  {\"match\": {\"route\": \"GET /r/%d\"}, \"policy\": \"p%d\"}%s\n", i, i, sep)
	}
	b.WriteString("]}\n")
	return []byte(b.String())
}

// Reading a file counts its lines once: the bytes scanned for line numbers are at most the
// file's size, whatever the number of entries (counting from the start for each entry
// would scan about n²/2 lines: 10⁴ times the file here).
func TestParseJSONLinear(t *testing.T) {
	const n = 20000
	data := bigFile(n)
	doc, scanned, err := parseJSON("big.json", data)
	require.NoError(t, err)
	require.Len(t, doc.Policies, n)
	require.Len(t, doc.Rules, n)
	assert.LessOrEqual(t, scanned, len(data))
	assert.Equal(t, []int{3, 3 + n - 1}, []int{doc.Policies[0].Line, doc.Policies[n-1].Line})
	assert.Equal(t, []int{3 + n + 2, 3 + n + 2 + n - 1}, []int{doc.Rules[0].Line, doc.Rules[n-1].Line})
}

// BenchmarkLoad parses and compiles files of n policies and n rules: the time per byte
// stays the same as n grows.
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		data := bigFile(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			reg := Registry{"user": func(Request) (string, error) { return "u", nil }}
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				doc, err := ParseJSON("big.json", data)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Compile(doc, reg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
