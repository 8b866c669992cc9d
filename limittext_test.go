package ratelimit_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// A limit written as a whole count per unit is written back as that count and unit
// ("1000/min", not "1.44e+06/day burst 1000", which is what 1000/60·86400 rounded makes
// of it), and every limit reads back from its text exactly: counts 1 to 2000 and a few
// thousand random ones up to 10⁹ in every unit, with the default burst and random ones.
func TestLimitStringWholeCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 11))
	counts := make([]int, 0, 5000)
	for n := 1; n <= 2000; n++ {
		counts = append(counts, n)
	}
	for range 3000 {
		counts = append(counts, 1+rng.IntN(1e9))
	}
	for _, unit := range []string{"s", "min", "h", "day"} {
		for _, n := range counts {
			text := strconv.Itoa(n) + "/" + unit
			l, err := ratelimit.ParseLimit(text)
			require.NoError(t, err, text)
			got := l.String()
			// Another unit may hold the same rate and burst: then it is the same limit.
			back, err := ratelimit.ParseLimit(got)
			require.NoError(t, err, got)
			require.Equal(t, l, back, "%s wrote %s", text, got)
			require.Equal(t, text, got, "the count is the burst: no other unit needs no burst")

			l.Burst = 1 + rng.IntN(2*n)
			got = l.String()
			back, err = ratelimit.ParseLimit(got)
			require.NoError(t, err, got)
			require.Equal(t, l, back, "%v wrote %s", l, got)
			count, _, _ := strings.Cut(got, "/")
			_, err = strconv.Atoi(count)
			require.NoError(t, err, "%v wrote %s: a whole count", l, got)
		}
	}
	assert.Equal(t, "1000/min", ratelimit.PerMinute(1000).String())
	assert.Equal(t, "60/min", ratelimit.Limit{Rate: 1, Burst: 60}.String())
	assert.Equal(t, "1000/min burst 5", ratelimit.Limit{Rate: 1000.0 / 60, Burst: 5}.String())
}
