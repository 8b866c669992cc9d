package observe_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/ratelimit/observe"
)

type count struct {
	policy, backend string
	n               int
}

// A Series holds at most its cap of pairs; past it, decisions share OtherSeries. Names that
// are not valid UTF-8 are counted under their cleaned form, with the names that clean to
// it, and a pair seen before is found without allocating.
func TestSeries(t *testing.T) {
	s := observe.NewSeries(2, func(policy, backend string) *count { return &count{policy: policy, backend: backend} })
	s.Lookup("login", "local").n++
	s.Lookup("bad\xff", "local").n++
	s.Lookup("bad\xfe", "local").n++ // cleans to the same name
	s.Lookup("api", "local").n++     // past the cap: two pairs, plus the raw names
	s.Lookup("login", "local").n++
	var got []count
	s.All(func(c *count) { got = append(got, *c) })
	assert.Equal(t, []count{{"login", "local", 2}, {"bad\uFFFD", "local", 2}, {observe.OtherSeries, observe.OtherSeries, 1}},
		sortedFirst(got))
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.Lookup("bad\xff", "local").n++ }))

	// The pair added last is found first, and only when both names are the same.
	s = observe.NewSeries(4, func(policy, backend string) *count { return &count{policy: policy, backend: backend} })
	for _, p := range [][2]string{{"a", "local"}, {"a", "redis"}, {"b", "redis"}, {"a", "redis"}, {"a", "local"}, {"b", "redis"}} {
		c := s.Lookup(p[0], p[1])
		assert.Equal(t, p, [2]string{c.policy, c.backend})
	}
}

// sortedFirst puts "login" first among the table's pairs, whose order a map does not keep;
// OtherSeries stays last.
func sortedFirst(c []count) []count {
	if len(c) == 3 && c[0].policy != "login" {
		c[0], c[1] = c[1], c[0]
	}
	return c
}
