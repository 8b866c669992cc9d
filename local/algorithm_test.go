package local

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

// A limit's algorithm is part of its bucket's identity, and the default is the limiter's:
// on a limiter whose default is the sliding log, one key under PerMinute(2) as a token
// bucket and as a sliding log is two buckets, and the sliding log named or left to the
// default is one.
func TestLimitAlgorithmIdentity(t *testing.T) {
	l := New(WithAlgorithm(ratelimit.SlidingWindowLog), WithCleanupInterval(-1))
	t.Cleanup(func() { _ = l.Close() })
	ctx := context.Background()
	implicit := ratelimit.PerMinute(2)
	explicit := implicit
	explicit.Algorithm = ratelimit.SlidingWindowLog
	tokens := implicit
	tokens.Algorithm = ratelimit.TokenBucket

	res, err := l.AllowN(ctx, "k", implicit, 2)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	assert.Equal(t, implicit, res.Limit, "the Result carries the limit as given")
	res, err = l.Allow(ctx, "k", explicit)
	require.NoError(t, err)
	assert.False(t, res.Allowed, "the default named is the default: the same bucket, drained")
	assert.Equal(t, explicit, res.Limit)
	res, err = l.AllowN(ctx, "k", tokens, 2)
	require.NoError(t, err)
	assert.True(t, res.Allowed, "another algorithm is another bucket, full")
	assert.Equal(t, 2, l.Len())

	// AllowAll refuses the implicit and explicit default together: one bucket twice.
	_, err = l.AllowAll(ctx, []ratelimit.Request{{Key: "k", Limit: implicit}, {Key: "k", Limit: explicit}})
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	// And decides a token bucket and a sliding log of one key together.
	mr, err := l.AllowAll(ctx, []ratelimit.Request{{Key: "j", Limit: tokens}, {Key: "j", Limit: implicit}})
	require.NoError(t, err)
	assert.True(t, mr.Allowed)
}

// On a token-bucket limiter, Wait under a limit naming the leaky bucket joins its queue:
// PerSecond(10) with a burst of 2, three Waits leave 100 ms apart.
func TestWaitPerLimitLeakyBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(WithCleanupInterval(-1))
		defer l.Close()
		limit := ratelimit.Limit{Rate: 10, Burst: 2, Algorithm: ratelimit.LeakyBucket}
		start := time.Now()
		for i := range 3 {
			require.NoError(t, l.Wait(context.Background(), "q", limit))
			assert.Equal(t, time.Duration(i)*100*time.Millisecond, time.Since(start))
		}
	})
}

// ValidateLimit and every call check a limit under its own algorithm: a sliding log's
// MaxLogBurst on a token-bucket limiter, a warm-up only with the token bucket, whichever
// the default; a limiter whose default this backend lacks still decides limits that name
// an algorithm it has.
func TestValidateLimitAlgorithm(t *testing.T) {
	tb := New(WithCleanupInterval(-1))
	t.Cleanup(func() { _ = tb.Close() })
	fw := New(WithAlgorithm(ratelimit.FixedWindow), WithCleanupInterval(-1))
	t.Cleanup(func() { _ = fw.Close() })
	odd := New(WithAlgorithm(ratelimit.CalendarQuota), WithCleanupInterval(-1))
	t.Cleanup(func() { _ = odd.Close() })

	bigLog := ratelimit.Limit{Rate: 1, Burst: args.MaxLogBurst + 1, Algorithm: ratelimit.SlidingWindowLog}
	warmTB := ratelimit.Limit{Rate: 1, Burst: 1, Warmup: time.Second, Algorithm: ratelimit.TokenBucket}
	warmFW := ratelimit.Limit{Rate: 1, Burst: 1, Warmup: time.Second, Algorithm: ratelimit.FixedWindow}
	warm := ratelimit.Limit{Rate: 1, Burst: 1, Warmup: time.Second}
	cases := []struct {
		name  string
		l     *Limiter
		limit ratelimit.Limit
		want  error
	}{
		{"LogBurstOnTokenBucket", tb, bigLog, ratelimit.ErrInvalidArgument},
		{"LogBurstAsTokenBucket", tb, ratelimit.Limit{Rate: 1, Burst: args.MaxLogBurst + 1}, nil},
		{"WarmTokenBucketOnFixedWindow", fw, warmTB, nil},
		{"WarmDefaultOnFixedWindow", fw, warm, ratelimit.ErrNotSupported},
		{"WarmFixedWindowOnTokenBucket", tb, warmFW, ratelimit.ErrNotSupported},
		{"UnknownAlgorithm", tb, ratelimit.Limit{Rate: 1, Burst: 1, Algorithm: 99}, ratelimit.ErrInvalidArgument},
		{"DefaultNotImplemented", odd, ratelimit.PerSecond(1), ratelimit.ErrNotSupported},
		{"NamedOnOddDefault", odd, ratelimit.Limit{Rate: 1, Burst: 1, Algorithm: ratelimit.SlidingWindowCounter}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.l.ValidateLimit(c.limit)
			_, allowErr := c.l.Allow(context.Background(), "v", c.limit)
			if c.want == nil {
				assert.NoError(t, err)
				assert.NoError(t, allowErr)
				return
			}
			assert.ErrorIs(t, err, c.want)
			assert.ErrorIs(t, allowErr, c.want, "Allow refuses what ValidateLimit refuses")
		})
	}
}
