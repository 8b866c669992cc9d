package local

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestLeakyBucketDoesNotDrift: at 300,000/s, T = 3.33 µs. A thousand requests at once leave
// at k·T, to the nearest microsecond; a schedule kept in whole microseconds would move 3 µs
// a request and let 1,111 in.
func TestLeakyBucketDoesNotDrift(t *testing.T) {
	h := harness(t, ratelimit.LeakyBucket)
	limit := ratelimit.Limit{Rate: 300000, Burst: 1000}
	ctx := context.Background()
	for k := range 1000 {
		res, err := h.Limiter.Allow(ctx, "k", limit)
		require.NoError(t, err)
		require.True(t, res.Allowed, "request %d", k)
		turn := (int64(k)*20 + 3) / 6 // k·10/3 µs rounded: k·10 mod 3 is 0, 1 or 2
		require.Equal(t, time.Duration(turn)*time.Microsecond, res.Delay, "request %d", k)
	}
	res, err := h.Limiter.Allow(ctx, "k", limit)
	require.NoError(t, err)
	assert.False(t, res.Allowed)
	// A millisecond drains exactly 300 places.
	h.Advance(time.Millisecond)
	res, err = h.Limiter.AllowN(ctx, "k", limit, 300)
	require.NoError(t, err)
	assert.True(t, res.Allowed)
	res, err = h.Limiter.Allow(ctx, "k", limit)
	require.NoError(t, err)
	assert.False(t, res.Allowed)
}

// TestLeakyBucketExtremes: the ends of the supported range decide exactly; a queue that
// would take longer than 2^53 µs to drain is refused, as on Redis.
func TestLeakyBucketExtremes(t *testing.T) {
	h := harness(t, ratelimit.LeakyBucket)
	ctx := context.Background()
	us, day := time.Microsecond, 24*time.Hour
	charge := ratelimit.Charge{At: ratelimittest.NewClock().Now()} // the clock never moves here

	fast := ratelimit.Limit{Rate: 1e6, Burst: 1e9}
	res, err := h.Limiter.AllowN(ctx, "fast", fast, 1e9)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Result{Allowed: true, Limit: fast, ResetAfter: 1000 * time.Second, Charge: charge}, res)
	res, err = h.Limiter.Allow(ctx, "fast", fast)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Result{Limit: fast, RetryAfter: us, ResetAfter: 1000 * time.Second}, res)

	// The longest queue there is: 104,249 days to drain, just under 2^53 µs.
	const longest = 104249
	slow := ratelimit.Limit{Rate: 1.0 / 86400, Burst: longest}
	res, err = h.Limiter.AllowN(ctx, "slow", slow, 2)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Result{Allowed: true, Limit: slow, Remaining: longest - 2, ResetAfter: 2 * day, Charge: charge}, res)
	res, err = h.Limiter.AllowN(ctx, "slow", slow, longest-2)
	require.NoError(t, err)
	assert.Equal(t, longest*day, res.ResetAfter)
	assert.Equal(t, 2*day, res.Delay)

	_, err = h.Limiter.Allow(ctx, "faster", ratelimit.Limit{Rate: 1.5e6, Burst: 1})
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	_, err = h.Limiter.Allow(ctx, "longer", ratelimit.Limit{Rate: 1.0 / 86400, Burst: longest + 1})
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, "a queue that drains in more than 2^53 µs")
}

// TestLeakyBucketAllocatesNothing pins the shaper's hot path at zero allocations.
func TestLeakyBucketAllocatesNothing(t *testing.T) {
	l := New(WithAlgorithm(ratelimit.LeakyBucket))
	defer l.Close()
	ctx := context.Background()
	open := ratelimit.Limit{Rate: 1e6, Burst: 1e9}
	full := ratelimit.Limit{Rate: 1e-3, Burst: 1}
	_, _ = l.Allow(ctx, "open", open)
	_, _ = l.Allow(ctx, "full", full)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = l.Allow(ctx, "open", open) }))
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = l.Allow(ctx, "full", full) }))
}
