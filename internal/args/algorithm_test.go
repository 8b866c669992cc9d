package args

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

func TestCheckAlgorithm(t *testing.T) {
	cases := []struct {
		a     ratelimit.Algorithm
		limit ratelimit.Limit
		text  string // "" when valid
	}{
		{ratelimit.SlidingWindowLog, ratelimit.Limit{Rate: 1, Burst: MaxLogBurst}, ""},
		{ratelimit.SlidingWindowLog, ratelimit.Limit{Rate: 1, Burst: MaxLogBurst + 1},
			"ratelimit: invalid limit: burst 10001 is above the sliding window log's maximum of 10000"},
		// The window must fit in [1 µs, 2^53 µs], as for every window algorithm.
		{ratelimit.SlidingWindowLog, ratelimit.Limit{Rate: 3e6, Burst: 1},
			"ratelimit: invalid limit: the window burst/rate = 3.3333333333333335e-07 s is not between 1 µs and 2^53 µs (285 years)"},
		{ratelimit.LeakyBucket, ratelimit.Limit{Rate: 1e6, Burst: 1e9}, ""},
		{ratelimit.LeakyBucket, ratelimit.Limit{Rate: 1.5e6, Burst: 1},
			"ratelimit: invalid limit: rate 1.5e+06 is above the leaky bucket's maximum of 1e+06 per second: it spaces requests by whole microseconds"},
		// The token bucket has no limits of its own but the time to refill: a burst of a billion
		// at a billion a second, or MaxBurst refilled in 2^53 µs exactly.
		{ratelimit.TokenBucket, ratelimit.Limit{Rate: 1e9, Burst: 1e9}, ""},
		{ratelimit.TokenBucket, ratelimit.Limit{Rate: 1e9, Burst: 1}, ""},
		{ratelimit.TokenBucket, ratelimit.Limit{Rate: 5e5, Burst: MaxBurst}, ""},
		{ratelimit.TokenBucket, ratelimit.Limit{Rate: 1e-10, Burst: 1},
			"ratelimit: invalid limit: burst/rate = 1e+10 s, the time a drained bucket takes to refill, is longer than 2^53 µs (285 years)"},
		{ratelimit.LeakyBucket, ratelimit.Limit{Rate: 499_999, Burst: MaxBurst},
			"ratelimit: invalid limit: burst/rate = 9.00721726917553e+09 s, the time a drained bucket takes to refill, is longer than 2^53 µs (285 years)"},
	}
	for _, c := range cases {
		err := CheckAlgorithm(c.a, c.limit)
		if c.text == "" {
			assert.NoError(t, err, "%v %v", c.a, c.limit)
			continue
		}
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
		assert.EqualError(t, err, c.text)
	}
}

// TestCheckWarmup: a warm-up is the token bucket's alone, up to MaxWarmupRate; every other
// algorithm refuses it as not supported, before its own checks.
func TestCheckWarmup(t *testing.T) {
	warm := ratelimit.Limit{Rate: 10, Burst: 10, Warmup: time.Second}
	require.NoError(t, CheckAlgorithm(ratelimit.TokenBucket, warm))
	require.NoError(t, CheckAlgorithm(ratelimit.TokenBucket, ratelimit.Limit{Rate: MaxWarmupRate, Burst: 1, Warmup: time.Second}))
	err := CheckAlgorithm(ratelimit.TokenBucket, ratelimit.Limit{Rate: 2e6, Burst: 1, Warmup: time.Second})
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	assert.EqualError(t, err, "ratelimit: invalid limit: rate 2e+06 is above the warm-up's maximum of 1e+06 per second")
	for _, a := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.SlidingWindowLog,
		ratelimit.SlidingWindowCounter, ratelimit.LeakyBucket} {
		err := CheckAlgorithm(a, warm)
		require.ErrorIs(t, err, ratelimit.ErrNotSupported, "%v", a)
		assert.EqualError(t, err, "ratelimit: not supported: a warm-up with "+a.String()+": only the token bucket has one")
		require.NoError(t, CheckAlgorithm(a, ratelimit.Limit{Rate: 10, Burst: 10}), "%v", a)
	}
}
