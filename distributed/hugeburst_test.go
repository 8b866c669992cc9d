package distributed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestHugeBurstDrainThenDeny drains buckets of args.MaxBurst at every rate the limit
// allows (T = 1 to 2 µs) and at clock readings that are not whole tokens, then asks for one
// more token at the same instant: every backend denies it. The conformance suite pins whole
// tokens; here the TAT, near 2^52 tokens, cannot hold the fraction of the clock, and a test
// of tat + n − now ≤ Burst rounded the sum and admitted the request (gcra.lua,
// leakybucket.lua and the local leaky bucket, which share the arithmetic). They still
// share it: the three answer alike, to the microsecond, and a request coming back after
// RetryAfter is admitted. (The local token bucket keeps tokens, not a TAT, and its
// RetryAfter is the exact one, which the TAT's rounding can miss by a microsecond.)
func TestHugeBurstDrainThenDeny(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	for _, rate := range []float64{5e5, 7e5, 999_999, 1e6} {
		limit := ratelimit.Limit{Rate: rate, Burst: args.MaxBurst}
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			clock := ratelimittest.NewClock()
			// The same arithmetic: each compared to the first, Delay aside.
			shared := []ratelimit.Limiter{
				newLimiter(t, client, clock),
				newLimiter(t, client, clock, distributed.WithAlgorithm(ratelimit.LeakyBucket)),
				newLocal(t, clock, ratelimit.LeakyBucket),
			}
			exact := newLocal(t, clock, ratelimit.TokenBucket)
			for offset := range 8 {
				clock.Advance(time.Duration(offset) * us)
				key := fmt.Sprint("k", offset)
				var first ratelimit.Result
				for i, l := range shared {
					res := drainThenDeny(t, l, clock, key, limit)
					res.Delay = 0
					if i == 0 {
						first = res
					}
					require.Equal(t, first, res, "limiter %d at +%d µs", i, offset)
				}
				drainThenDeny(t, exact, clock, key, limit)
			}
		})
	}
}

// drainThenDeny takes all of key's bucket and asks for one more token, which must be denied,
// and then, after its RetryAfter, admitted. It leaves the clock where it found it and returns
// the denial.
func drainThenDeny(t *testing.T, l ratelimit.Limiter, clock *ratelimittest.Clock, key string, limit ratelimit.Limit) ratelimit.Result {
	t.Helper()
	ctx := context.Background()
	res, err := l.AllowN(ctx, key, limit, limit.Burst)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Zero(t, res.Remaining)
	denial, err := l.Allow(ctx, key, limit)
	require.NoError(t, err)
	require.False(t, denial.Allowed, "admitted right after the drain")
	require.Zero(t, denial.Remaining)
	require.Positive(t, denial.RetryAfter)
	require.LessOrEqual(t, denial.RetryAfter, 3*us, "a token is at most 2 µs away")

	clock.Advance(denial.RetryAfter)
	res, err = l.Allow(ctx, key, limit)
	require.NoError(t, err)
	require.True(t, res.Allowed, "denied at RetryAfter %v", denial.RetryAfter)
	clock.Advance(-denial.RetryAfter)
	return denial
}

// newLocal returns a local limiter of algorithm on clock, closed at cleanup.
func newLocal(t *testing.T, clock *ratelimittest.Clock, algorithm ratelimit.Algorithm) *local.Limiter {
	l := local.New(local.WithClock(clock.Now), local.WithAlgorithm(algorithm))
	t.Cleanup(func() { _ = l.Close() })
	return l
}
