package fallback_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestConformanceHealthy: over a healthy primary, with its denial cache on, the Limiter
// passes every rule of the backends, for every algorithm: the cache changes no answer.
func TestConformanceHealthy(t *testing.T) {
	ratelimittest.Run(t, ratelimittest.Harness{
		New: func(t testing.TB, c ratelimittest.Config) ratelimit.Limiter {
			primary := local.New(local.WithClock(c.Clock.Now), local.WithCleanupInterval(-1),
				local.WithAlgorithm(c.Algorithm), local.WithReserves(c.Reserves))
			t.Cleanup(func() { _ = primary.Close() })
			return fallback.New(primary, nil, fallback.WithClock(c.Clock.Now))
		},
		Reserves: true,
		Warmup:   true,
		Quotas:   true,
	})
}

// TestConformanceDegraded: over a primary that cannot reach its Redis (a real Redis
// backend, on an address nothing listens on), the Limiter passes every rule of the
// backends, for every algorithm: the secondary decides everything, exactly as it would alone.
func TestConformanceDegraded(t *testing.T) {
	addr := deadAddr(t)
	ratelimittest.Run(t, ratelimittest.Harness{
		New: func(t testing.TB, c ratelimittest.Config) ratelimit.Limiter {
			secondary := local.New(local.WithClock(c.Clock.Now), local.WithCleanupInterval(-1),
				local.WithAlgorithm(c.Algorithm), local.WithReserves(c.Reserves))
			t.Cleanup(func() { _ = secondary.Close() })
			l := fallback.New(deadRedis(t, addr, c.Algorithm), secondary, fallback.WithClock(c.Clock.Now),
				fallback.WithReserves(c.Reserves))
			// Open the breaker first, so that Wait goes to the secondary from the start
			// (the Redis backend may answer ErrNotSupported, rightly passed through).
			for range fallback.DefaultFailureThreshold {
				_, err := l.Allow(context.Background(), "warm-up", roomy)
				require.NoError(t, err)
			}
			require.Equal(t, fallback.Open, l.State())
			return l
		},
		Reserves: true,
		Warmup:   true,
		Quotas:   true,
	})
}

// deadAddr returns a loopback address nothing listens on: it was bound and released.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// deadRedis returns a Redis backend on addr whose calls fail at once when nothing listens
// there: one dial, no retry.
func deadRedis(t testing.TB, addr string, alg ratelimit.Algorithm) *distributed.Limiter {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = c.Close() })
	l, err := distributed.New(c, distributed.WithAlgorithm(alg))
	require.NoError(t, err)
	return l
}

// TestInstancesAlgorithm: the share keeps the limit's algorithm: degraded, a sliding log's
// share on a token-bucket secondary is a sliding log, which admits its Burst of 2 in a
// window and nothing more until the window has passed, where a token bucket would refill.
func TestInstancesAlgorithm(t *testing.T) {
	r := newRig(t, fallback.WithInstances(4))
	r.primary.fail(nil)
	limit := ratelimit.Limit{Rate: 8, Burst: 8, Algorithm: ratelimit.SlidingWindowLog}
	share := ratelimit.Limit{Rate: 2, Burst: 2, Algorithm: ratelimit.SlidingWindowLog} // W = 1 s
	res, err := r.l.AllowN(context.Background(), "k", limit, 2)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, share, res.Limit)
	r.clock.Advance(500 * ms) // a token bucket of the share would hold one again
	require.False(t, r.allow(t, limit).Allowed)
	r.clock.Advance(500 * ms)
	require.True(t, r.allow(t, limit).Allowed)
}

// TestInstances: with four instances expected, the secondary enforces a quarter of the limit;
// a request costing more than the quarter's burst takes all of it instead of failing with
// ErrExceedsBurst, which the real limit would not have said.
func TestInstances(t *testing.T) {
	r := newRig(t, fallback.WithInstances(4))
	r.primary.fail(nil)
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 10, Burst: 10}
	share := ratelimit.Limit{Rate: 2.5, Burst: 2} // T = 400 ms
	steps := []struct {
		n    int
		want ratelimit.Result
	}{
		// Five tokens: the whole share (2) is taken.
		{5, ratelimit.Result{Allowed: true, Limit: share, Remaining: 0, ResetAfter: 800 * ms}},
		// Again: the share must be full, 800 ms away.
		{5, ratelimit.Result{Limit: share, RetryAfter: 800 * ms, ResetAfter: 800 * ms}},
		{1, ratelimit.Result{Limit: share, RetryAfter: 400 * ms, ResetAfter: 800 * ms}},
	}
	for i, s := range steps {
		res, err := r.l.AllowN(ctx, "k", limit, s.n)
		require.NoError(t, err, "step %d", i)
		if s.want.Allowed {
			s.want.Charge = ratelimit.Charge{At: r.clock.Now(), Part: "secondary"}
		}
		require.Equal(t, s.want, res, "step %d", i)
	}
	// A burst smaller than the number of instances leaves each a burst of 1.
	res, err := r.l.Allow(ctx, "k", ratelimit.Limit{Rate: 1, Burst: 3})
	require.NoError(t, err)
	require.Equal(t, ratelimit.Result{Allowed: true, Limit: ratelimit.Limit{Rate: 0.25, Burst: 1}, ResetAfter: 4 * time.Second,
		Charge: ratelimit.Charge{At: r.clock.Now(), Part: "secondary"}}, res)
	// A warm-up is kept: the share warms up as the whole would.
	res, err = r.l.Allow(ctx, "w", ratelimit.Limit{Rate: 10, Burst: 12, Warmup: time.Second})
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, ratelimit.Limit{Rate: 2.5, Burst: 3, Warmup: time.Second}, res.Limit)
	// Costs above the real burst are still refused as every backend refuses them.
	_, err = r.l.AllowN(ctx, "k", limit, 11)
	require.ErrorIs(t, err, ratelimit.ErrExceedsBurst)
}

// TestWait: Wait goes to the primary while it is healthy, to the secondary (with its share
// of the limit) when it fails.
func TestWait(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 1}
	require.NoError(t, r.l.Wait(ctx, "k", limit))
	require.Equal(t, int64(1), r.primary.calls.Load())
	res, err := r.primary.Limiter.Allow(ctx, "k", limit)
	require.NoError(t, err)
	require.False(t, res.Allowed, "the primary's token was taken")

	r.primary.fail(nil)
	require.NoError(t, r.l.Wait(ctx, "k", limit)) // the secondary's token
	require.Equal(t, int64(2), r.primary.calls.Load())
	_, errs := r.hooks.seen()
	require.Equal(t, []string{failed}, errs)
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	require.ErrorIs(t, r.l.Wait(short, "k", limit), context.DeadlineExceeded)
}

// TestClose: calls after Close fail with ErrClosed; the primary and the secondary, which the
// caller owns, stay open.
func TestClose(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	require.NoError(t, r.l.Close())
	_, err := r.l.Allow(ctx, "k", roomy)
	require.ErrorIs(t, err, ratelimit.ErrClosed)
	require.ErrorIs(t, r.l.Wait(ctx, "k", roomy), ratelimit.ErrClosed)
	require.NoError(t, r.l.Close())
	require.Zero(t, r.primary.calls.Load())
	for _, l := range []ratelimit.Limiter{r.primary, r.secondary} {
		res, err := l.Allow(ctx, "k", roomy)
		require.NoError(t, err)
		require.True(t, res.Allowed)
	}
}

func TestNewNilPrimary(t *testing.T) {
	require.PanicsWithValue(t, "fallback: New: nil primary Limiter", func() { fallback.New(nil, nil) })
}

// TestNilOption: a nil Option is skipped, as everywhere in the module.
func TestNilOption(t *testing.T) {
	r := newRig(t, nil, fallback.WithInstances(0), nil)
	require.True(t, r.allow(t, roomy).Allowed)
}

// TestInstancesPriorities: degraded with WithInstances(1) and (4), a request of every
// priority and every cost from 1 to Burst gets the answer the healthy primary gives as to
// whether it is too costly. One the primary admits (on a full bucket) is admitted by a full
// share, and takes as much of it as the share can give its priority: its cost, or the
// share's burst less the reserve kept back from that priority. One the primary refuses as
// too costly is refused as such. With the default reserves and custom ones, given to the
// limiters and to the Limiter alike.
func TestInstancesPriorities(t *testing.T) {
	limit := ratelimit.Limit{Rate: 10, Burst: 20}
	ctx := context.Background()
	for _, reserves := range []priority.Reserves{{}, {Normal: 0.3, Sheddable: 0.6}} {
		for _, instances := range []int{1, 4} {
			t.Run(fmt.Sprintf("%+v/%d", reserves, instances), func(t *testing.T) {
				clock := ratelimittest.NewClock()
				newLimiter := func() *local.Limiter {
					l := local.New(local.WithClock(clock.Now), local.WithCleanupInterval(-1), local.WithReserves(reserves))
					t.Cleanup(func() { _ = l.Close() })
					return l
				}
				healthy := newLimiter()
				primary, secondary := &switched{Limiter: newLimiter()}, newLimiter()
				primary.fail(nil)
				l := fallback.New(primary, secondary, fallback.WithClock(clock.Now),
					fallback.WithInstances(instances), fallback.WithReserves(reserves))
				share := ratelimit.Limit{Rate: limit.Rate / float64(instances), Burst: limit.Burst / instances}
				for _, p := range []priority.Level{priority.Critical, priority.Normal, priority.Sheddable} {
					pctx := priority.With(ctx, p)
					// What the share can give p: its burst less p's reserve (5 − 2 = 3 tokens for
					// Sheddable with the default half, with four instances).
					part := share.Burst - reserves.Tokens(p, share.Burst)
					for n := 1; n <= limit.Burst; n++ {
						key := fmt.Sprintf("%v-%d", p, n)
						want, wantErr := healthy.AllowN(pctx, key, limit, n)
						got, err := l.AllowN(pctx, key, limit, n)
						if wantErr != nil {
							require.ErrorIs(t, wantErr, ratelimit.ErrExceedsBurst, "%v, n = %d", p, n)
							require.ErrorIs(t, err, ratelimit.ErrExceedsBurst, "%v, n = %d: refused as the primary refuses", p, n)
							continue
						}
						require.True(t, want.Allowed)
						require.NoError(t, err, "%v, n = %d: the primary admits it", p, n)
						require.True(t, got.Allowed, "%v, n = %d", p, n)
						require.Equal(t, share, got.Limit)
						// Count what the request left in the share: Critical takes it to empty.
						left := 0
						for ; left <= share.Burst; left++ {
							res, err := secondary.Allow(ctx, key, share)
							require.NoError(t, err)
							if !res.Allowed {
								break
							}
						}
						require.Equal(t, share.Burst-min(n, part), left, "%v, n = %d: charged min(n, %d)", p, n, part)
					}
				}
			})
		}
	}
}

// TestInstancesPrioritiesAllowAllPeek: AllowAll and Peek clamp a degraded cost as AllowN
// does. Four instances, a burst of 20: the share's 5 tokens less the Sheddable half (2)
// leave 3 to a Sheddable request, which the primary would admit up to 10 tokens. The
// primary is a Redis backend that cannot reach its Redis.
func TestInstancesPrioritiesAllowAllPeek(t *testing.T) {
	clock := ratelimittest.NewClock()
	secondary := newLocal(t, clock)
	l := fallback.New(deadRedis(t, deadAddr(t), ratelimit.TokenBucket), secondary,
		fallback.WithClock(clock.Now), fallback.WithInstances(4))
	limit := ratelimit.Limit{Rate: 10, Burst: 20}
	share := ratelimit.Limit{Rate: 2.5, Burst: 5}
	ctx := priority.With(context.Background(), priority.Sheddable)

	res, err := ins(l).Peek(ctx, "k", limit, 4)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	mr, err := multi(l).AllowAll(ctx, []ratelimit.Request{{Key: "k", Limit: limit, N: 4}})
	require.NoError(t, err)
	require.True(t, mr.Allowed)
	require.Equal(t, share, mr.Results[0].Limit)
	// 3 tokens taken: the share's 2 left are Sheddable's reserve.
	_, err = multi(l).AllowAll(ctx, []ratelimit.Request{{Key: "k", Limit: limit, N: 11}})
	require.ErrorIs(t, err, ratelimit.ErrExceedsBurst, "above what the primary gives Sheddable")
	res, err = secondary.AllowN(context.Background(), "k", share, 2)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, 0, res.Remaining)
}
