package local_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/local"
)

// TestRateBelowResolution: a token bucket that refills in less than 1 µs, the resolution
// of the limiter's clock, would admit Burst per microsecond, not Rate per second: at
// math.MaxFloat64 (x/time/rate's Inf) and Burst 1 it denied the second of three requests in
// one microsecond. ValidateLimit refuses it, so middleware does at start-up, and so do
// AllowN, AllowAll and Wait, as the Redis backend does (its MaxRate). A burst that holds a
// microsecond's tokens is accepted at any rate.
func TestRateBelowResolution(t *testing.T) {
	now := time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)
	l := local.New(local.WithClock(func() time.Time { return now }))
	t.Cleanup(func() { _ = l.Close() })
	ctx := context.Background()
	for _, limit := range []ratelimit.Limit{
		{Rate: math.MaxFloat64, Burst: 1},
		{Rate: 1e7, Burst: 9}, // 10 tokens a microsecond
		{Rate: 1e300, Burst: args.MaxBurst},
	} {
		t.Run(limit.String(), func(t *testing.T) {
			require.ErrorIs(t, l.ValidateLimit(limit), ratelimit.ErrInvalidArgument)
			res, err := l.Allow(ctx, "k", limit)
			require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
			require.Equal(t, ratelimit.Result{Limit: limit}, res)
			_, err = l.AllowAll(ctx, []ratelimit.Request{{Key: "k", Limit: limit}})
			require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
			require.ErrorIs(t, l.Wait(ctx, "k", limit), ratelimit.ErrInvalidArgument)
		})
	}
	require.EqualError(t, l.ValidateLimit(ratelimit.Limit{Rate: 1e7, Burst: 9}),
		"ratelimit: invalid limit: burst/rate = 9e-07 s, the time a drained bucket takes to refill, is shorter than 1 µs, the clock's resolution: it would admit 9 per µs, not 1e+07 per second; raise the burst to at least rate/10⁶")

	// Burst = Rate·1 µs: the bucket refills exactly once a microsecond, and admits all of
	// it at each reading.
	limit := ratelimit.Limit{Rate: 1e7, Burst: 10}
	require.NoError(t, l.ValidateLimit(limit))
	for range 2 {
		for i := range 11 {
			res, err := l.Allow(ctx, "ok", limit)
			require.NoError(t, err)
			require.Equal(t, i < 10, res.Allowed, "request %d", i)
		}
		now = now.Add(time.Microsecond)
	}
}
