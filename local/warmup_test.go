package local

import (
	"context"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// warmLimit is the conformance suite's warm-up limit: 100 a second, a burst of 50, warm
// after 1 s; cold, it holds 50/3 tokens.
var warmLimit = ratelimit.Limit{Rate: 100, Burst: 50, Warmup: time.Second}

// TestWarmupCurves pins W and τ at their ends and middle, and checks that neither ever
// decreases from one microsecond to the next, in float64, across the end of a warm-up: the
// searches for RetryAfter and ResetAfter rest on it.
func TestWarmupCurves(t *testing.T) {
	const p, r, b = 1e6, 100.0, 50.0
	assert.Equal(t, 0.0, warmClock(0, p, r))
	assert.InDelta(t, 25.0, warmClock(p/2, p, r), 1e-12) // (1/2)(3/2)/3 of 100 tokens a second
	assert.InDelta(t, 200.0/3, warmClock(p, p, r), 1e-12)
	assert.InDelta(t, 200.0/3+100, warmClock(2*p, p, r), 1e-12)
	assert.InDelta(t, 50.0/3, warmTolerance(0, p, b), 1e-12)
	assert.InDelta(t, 100.0/3, warmTolerance(p/2, p, b), 1e-12)
	assert.Equal(t, b, warmTolerance(p, p, b))
	assert.Equal(t, 1.0, warmTolerance(0, p, 2), "at least one token")

	for _, c := range []struct{ p, r, b float64 }{
		{1e6, 100, 50}, {3, 1e6, 1e9}, {1 << 52, 1e6, 1 << 52}, {7e9, 1.0 / 86400, 5},
	} {
		for _, d0 := range []float64{0, max(c.p/2-1000, 0), max(c.p-1000, 0)} {
			w, tol := warmClock(d0, c.p, c.r), warmTolerance(d0, c.p, c.b)
			for d := d0 + 1; d < d0+2000; d++ {
				w2, tol2 := warmClock(d, c.p, c.r), warmTolerance(d, c.p, c.b)
				require.GreaterOrEqual(t, w2, w, "%+v: W falls at %v", c, d)
				require.GreaterOrEqual(t, tol2, tol, "%+v: τ falls at %v", c, d)
				w, tol = w2, tol2
			}
		}
	}
}

// TestLeastUS: the search finds the least point of a monotone test whatever the guess, and
// stops at 2⁵³ µs.
func TestLeastUS(t *testing.T) {
	for _, answer := range []int64{1, 2, 3, 1000, 123_456_789, maxUS - 1, maxUS} {
		ok := func(y int64) bool { return y >= answer }
		for _, guess := range []int64{0, 1, answer - 1, answer, answer + 1, 2 * answer, maxUS, math.MaxInt64} {
			require.Equal(t, answer, leastUS(0, guess, ok), "answer %d, guess %d", answer, guess)
		}
	}
	require.Equal(t, int64(maxUS), leastUS(0, 5, func(int64) bool { return false }))
}

// TestWarmupSweep: the sweep drops a bucket with a warm-up only once it is cold, when a new
// bucket would decide as it does: 1.5 s after one request at a cold start (see the
// conformance suite's RestartAfterRest), not at 1.4 s.
func TestWarmupSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(WithCleanupInterval(100*time.Millisecond), WithIdleTimeout(-1))
		defer l.Close()
		_, err := l.Allow(context.Background(), "k", warmLimit)
		require.NoError(t, err)
		time.Sleep(1450 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, 1, l.Len())
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, 0, l.Len())
	})
}

// TestWarmupOverflow: at the cap, keys without a bucket share one overflow bucket per limit,
// warm-up included: a plain limit's overflow bucket is not a warm one's.
func TestWarmupOverflow(t *testing.T) {
	clock := ratelimittest.NewClock()
	l := New(WithMaxBuckets(64), WithClock(clock.Now), WithCleanupInterval(-1))
	defer l.Close()
	ctx := context.Background()
	plain := ratelimit.Limit{Rate: warmLimit.Rate, Burst: warmLimit.Burst}
	hourly := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 1}
	for i := range 2000 { // fill every shard with a drained bucket of another limit
		_, err := l.Allow(ctx, "a"+strconv.Itoa(i), hourly)
		require.NoError(t, err)
	}
	require.Equal(t, 64, l.Len())
	// New keys now share the overflow buckets: the plain one holds 50, the warm one 16.
	res, err := l.AllowN(ctx, "b1", plain, 50)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	res, err = l.AllowN(ctx, "b2", warmLimit, 16)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	res, err = l.Allow(ctx, "b3", warmLimit)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	require.Equal(t, 64, l.Len())
}

// TestWarmupConcurrency: 64 goroutines on one cold bucket whose clock stands still: exactly
// ⌊τ(0)⌋ = 16 win, and every loser is told when to come back.
func TestWarmupConcurrency(t *testing.T) {
	clock := ratelimittest.NewClock()
	l := New(WithClock(clock.Now), WithCleanupInterval(-1))
	defer l.Close()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range 4 {
				res, err := l.Allow(context.Background(), "hot", warmLimit)
				assert.NoError(t, err)
				if res.Allowed {
					admitted.Add(1)
				} else {
					assert.Positive(t, res.RetryAfter)
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(16), admitted.Load())
}

// TestWarmupWait: Wait on a cold bucket for a token it does not hold yet waits for the ramp,
// and gets it.
func TestWarmupWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New()
		defer l.Close()
		ctx := context.Background()
		_, err := l.AllowN(ctx, "k", warmLimit, 16)
		require.NoError(t, err)
		start := time.Now()
		require.NoError(t, l.Wait(ctx, "k", warmLimit))
		// The next token: W = 0.33 (T = 49.33 against 49) at 9,902 µs.
		assert.Equal(t, 9902*time.Microsecond, time.Since(start))
	})
}

// TestWarmupAllocatesNothing: a bucket with a warm-up decides without allocating, allowed
// and denied (the searches' closures stay on the stack).
func TestWarmupAllocatesNothing(t *testing.T) {
	l := New()
	defer l.Close()
	ctx := context.Background()
	open := ratelimit.Limit{Rate: 1e6, Burst: 1e9, Warmup: time.Hour}
	shut := ratelimit.Limit{Rate: 1e-3, Burst: 1, Warmup: time.Hour}
	_, _ = l.Allow(ctx, "open", open)
	_, _ = l.Allow(ctx, "shut", shut)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = l.Allow(ctx, "open", open) }))
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = l.Allow(ctx, "shut", shut) }))
}

// BenchmarkWarmup: decisions on one hot bucket with a warm-up, under its mutex, every call
// allowed or every call denied, beside the plain token bucket's compare-and-swap on the
// same limits (BenchmarkAllow's, for the plain one).
func BenchmarkWarmup(b *testing.B) {
	for _, tr := range []struct {
		name  string
		allow bool
		limit ratelimit.Limit
	}{
		{"allow", true, ratelimit.Limit{Rate: 1e6, Burst: 1e9}},
		{"deny", false, ratelimit.Limit{Rate: 1e-6, Burst: 1}},
	} {
		for _, warm := range []time.Duration{0, time.Hour} {
			limit := tr.limit
			limit.Warmup = warm
			name := tr.name + "/plain"
			if warm != 0 {
				name = tr.name + "/warm"
			}
			b.Run(name, func(b *testing.B) {
				l := New()
				b.Cleanup(func() { l.Close() })
				ctx := context.Background()
				_, _ = l.Allow(ctx, "hot", limit)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if res, _ := l.Allow(ctx, "hot", limit); res.Allowed != tr.allow {
						b.Fatal("left the benchmark's path")
					}
				}
			})
		}
	}
}
