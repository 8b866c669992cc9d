package distributed_test

import (
	"context"
	"math"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/args"
)

// ValidateLimit says, without a round trip, what AllowN would refuse; a nil Option is
// skipped, and zero options mean their defaults.
func TestValidateLimit(t *testing.T) {
	l, err := distributed.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), nil,
		distributed.WithTimeout(0), distributed.WithPrefix(""), distributed.WithAlgorithm(ratelimit.SlidingWindowLog))
	require.NoError(t, err)
	assert.NoError(t, l.ValidateLimit(ratelimit.PerSecond(10)))
	assert.ErrorIs(t, l.ValidateLimit(ratelimit.Limit{Rate: 2e6, Burst: 1}), ratelimit.ErrInvalidArgument)
	assert.ErrorIs(t, l.ValidateLimit(ratelimit.Limit{Rate: 1, Burst: args.MaxLogBurst + 1}), ratelimit.ErrInvalidArgument)
	assert.ErrorIs(t, l.ValidateLimit(ratelimit.Limit{Rate: 1}), ratelimit.ErrInvalidArgument)

	other, err := distributed.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), distributed.WithAlgorithm(ratelimit.CalendarQuota))
	require.NoError(t, err)
	assert.ErrorIs(t, other.ValidateLimit(ratelimit.PerSecond(10)), ratelimit.ErrNotSupported)
}

// TestRateBelowResolution: a rate faster than the clock's microsecond, math.MaxFloat64
// (x/time/rate's Inf) among them, is refused by ValidateLimit, AllowN, AllowAll and Wait
// without a round trip, as the local backend refuses a bucket that refills in less than
// 1 µs.
func TestRateBelowResolution(t *testing.T) {
	ctx := context.Background()
	l, err := distributed.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}),
		distributed.WithAlgorithm(ratelimit.LeakyBucket))
	require.NoError(t, err)
	for _, limit := range []ratelimit.Limit{
		{Rate: math.MaxFloat64, Burst: 1},
		{Rate: 1e7, Burst: 9},
		{Rate: 1e300, Burst: args.MaxBurst},
	} {
		require.ErrorIs(t, l.ValidateLimit(limit), ratelimit.ErrInvalidArgument)
		_, err := l.Allow(ctx, "k", limit)
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
		_, err = l.AllowAll(ctx, []ratelimit.Request{{Key: "k", Limit: limit}})
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
		require.ErrorIs(t, l.Wait(ctx, "k", limit), ratelimit.ErrInvalidArgument)
	}
}
