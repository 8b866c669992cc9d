package args

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

func TestCheck(t *testing.T) {
	ok := ratelimit.Limit{Rate: 1, Burst: 3}
	cases := []struct {
		key   string
		limit ratelimit.Limit
		n     int
		want  error
		text  string
	}{
		{"k", ok, 1, nil, ""},
		{"k", ok, 3, nil, ""},
		// The key is checked first, then the limit, then the cost.
		{"", ratelimit.Limit{}, 0, ratelimit.ErrKeyEmpty, "ratelimit: empty key"},
		{"k", ratelimit.Limit{Rate: math.NaN(), Burst: 1}, 0, ratelimit.ErrInvalidLimit,
			"ratelimit: invalid limit: rate NaN is not a finite number greater than zero"},
		{"k", ok, 0, ratelimit.ErrInvalidCost, "ratelimit: invalid cost: n = 0"},
		{"k", ok, 4, ratelimit.ErrExceedsBurst, "ratelimit: cost exceeds burst: n = 4, burst 3"},
	}
	for _, c := range cases {
		err := Check(c.key, c.limit, c.n)
		if c.want == nil {
			assert.NoError(t, err)
			continue
		}
		require.ErrorIs(t, err, c.want)
		assert.EqualError(t, err, c.text)
	}
}
