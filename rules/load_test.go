package rules

import (
	"fmt"
	"net/http"
	"net/http/httptest"
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

// Matching tries the rules of the request's route and those that name no route, in the
// file's order: with 20k routes, a request of the last tries one rule; a rule on a header
// placed between routes still comes before the later ones.
func TestMatchIndex(t *testing.T) {
	const n = 20000
	doc, err := ParseJSON("big.json", bigFile(n))
	require.NoError(t, err)
	doc.Policies = append(doc.Policies, PolicyDoc{Name: "batch", Limits: []string{"1/s"}})
	doc.Rules = append(doc.Rules[:n/2:n/2], append([]RuleDoc{{Match: Match{Header: map[string]string{"X-Batch": "yes"}}, Policy: "batch"}},
		doc.Rules[n/2:]...)...)
	s, err := Compile(doc, Registry{"user": func(Request) (string, error) { return "u", nil }})
	require.NoError(t, err)
	last := fmt.Sprintf("GET /r/%d", n-1)
	assert.Equal(t, []int{n}, s.byPath["/r/"+fmt.Sprint(n-1)], "the last route's rule alone")
	assert.Equal(t, []int{n / 2}, s.others)

	req := func(route, batch string) Request {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if batch != "" {
			r.Header.Set("X-Batch", batch)
		}
		return FromHTTP(r, route)
	}
	assert.Equal(t, fmt.Sprintf("p%d", n-1), s.Match(req(last, "")).Name)
	assert.Equal(t, "batch", s.Match(req(last, "yes")).Name, "the header rule comes first")
	assert.Equal(t, "p0", s.Match(req("GET /r/0", "yes")).Name, "a route rule before it comes first")
	assert.Nil(t, s.Match(req("GET /nowhere", "")))
}

// BenchmarkMatchLast matches a request against the last of 100k route rules.
func BenchmarkMatchLast(b *testing.B) {
	const n = 100000
	doc, err := ParseJSON("big.json", bigFile(n))
	require.NoError(b, err)
	s, err := Compile(doc, Registry{"user": func(Request) (string, error) { return "u", nil }})
	require.NoError(b, err)
	r := FromHTTP(httptest.NewRequest(http.MethodGet, "/", nil), fmt.Sprintf("GET /r/%d", n-1))
	require.Equal(b, fmt.Sprintf("p%d", n-1), s.Match(r).Name)
	for b.Loop() {
		s.Match(r)
	}
}
