package local

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestConformance runs every rule of the contract, on a clock the test moves.
func TestConformance(t *testing.T) {
	ratelimittest.Run(t, ratelimittest.Harness{
		New: func(t testing.TB, c ratelimittest.Config) ratelimit.Limiter {
			l := New(WithClock(c.Clock.Now), WithAlgorithm(c.Algorithm), WithReserves(c.Reserves))
			t.Cleanup(func() { l.Close() })
			return l
		},
		Reserves:  true,
		Warmup:    true,
		Quotas:    true,
		KeepUsage: true,
	})
}

// TestSystemClock plays the seed timeline on the default, monotonic clock; synctest moves it.
func TestSystemClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New()
		defer l.Close()
		ctx := context.Background()
		limit := ratelimit.Limit{Rate: 1, Burst: 2}
		time.Sleep(100 * time.Millisecond)
		for _, want := range []bool{true, true, false} {
			res, err := l.Allow(ctx, "seed", limit)
			require.NoError(t, err)
			require.Equal(t, want, res.Allowed)
		}
		time.Sleep(1400 * time.Millisecond)
		res, err := l.Allow(ctx, "seed", limit)
		require.NoError(t, err)
		want := ratelimit.Result{Allowed: true, Limit: limit, ResetAfter: 1600 * time.Millisecond,
			Charge: ratelimit.Charge{At: time.Now().Truncate(time.Microsecond).UTC()}}
		require.Equal(t, want, res)
	})
}

var perSecond = ratelimit.Limit{Rate: 1, Burst: 1}

func TestWaitBlocksUntilAllowed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New()
		defer l.Close()
		ctx := context.Background()
		limit := ratelimit.Limit{Rate: 10, Burst: 1} // a token every 100 ms
		require.NoError(t, l.Wait(ctx, "k", limit))

		start := time.Now()
		require.NoError(t, l.Wait(ctx, "k", limit))
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
	})
}

func TestWaitManyWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New()
		defer l.Close()
		ctx := context.Background()
		limit := ratelimit.Limit{Rate: 10, Burst: 1}
		require.NoError(t, l.Wait(ctx, "k", limit))

		start := time.Now()
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() { assert.NoError(t, l.Wait(ctx, "k", limit)) })
		}
		wg.Wait()
		// One token per 100 ms, five waiters: the last one is served at 500 ms, not before.
		assert.Equal(t, 500*time.Millisecond, time.Since(start))
	})
}

func TestWaitReturnsWhenContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New()
		defer l.Close()
		limit := ratelimit.Limit{Rate: 1, Burst: 1}
		res, err := l.Allow(context.Background(), "k", limit)
		require.NoError(t, err)
		require.True(t, res.Allowed)

		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		start := time.Now()
		require.ErrorIs(t, l.Wait(ctx, "k", limit), context.Canceled)
		assert.Equal(t, 300*time.Millisecond, time.Since(start))

		// The canceled Wait took nothing: the token arrives at 1 s as it would have.
		time.Sleep(700 * time.Millisecond)
		res, err = l.Allow(context.Background(), "k", limit)
		require.NoError(t, err)
		assert.True(t, res.Allowed)
	})
}

func TestWaitFailsFastOnDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New()
		defer l.Close()
		limit := ratelimit.Limit{Rate: 1, Burst: 1}
		_, err := l.Allow(context.Background(), "k", limit)
		require.NoError(t, err)

		ctx, cancel := context.WithTimeout(context.Background(), 999*time.Millisecond)
		defer cancel()
		start := time.Now()
		require.ErrorIs(t, l.Wait(ctx, "k", limit), context.DeadlineExceeded)
		assert.Zero(t, time.Since(start))

		// A deadline the token can meet is waited for.
		ctx, cancel = context.WithTimeout(context.Background(), time.Second+time.Millisecond)
		defer cancel()
		require.NoError(t, l.Wait(ctx, "k", limit))
		assert.Equal(t, time.Second, time.Since(start))
	})
}

func TestCloseWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New()
		_, err := l.Allow(context.Background(), "k", perSecond)
		require.NoError(t, err)
		done := make(chan error)
		go func() { done <- l.Wait(context.Background(), "k", perSecond) }()
		synctest.Wait()
		require.NoError(t, l.Close())
		require.ErrorIs(t, <-done, ratelimit.ErrClosed)
	})
}

// TestCleanupDropsOnlyFullBuckets: a sweep drops a bucket that has been full for the idle
// timeout and keeps one that is still refilling, however long it has been idle.
func TestCleanupDropsOnlyFullBuckets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New() // sweeps every minute, drops buckets full for 5 minutes
		defer l.Close()
		ctx := context.Background()
		fast := ratelimit.Limit{Rate: 1, Burst: 5}          // full again 1 s after one request
		slow := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 2} // a token an hour
		_, err := l.Allow(ctx, "fast", fast)
		require.NoError(t, err)
		_, err = l.AllowN(ctx, "slow", slow, 2)
		require.NoError(t, err)
		require.Equal(t, 2, l.Len())

		// The sweep at 5 min looks back to 0 s, when "fast" was not yet full: kept.
		time.Sleep(5*time.Minute + time.Second)
		synctest.Wait()
		require.Equal(t, 2, l.Len())

		// The sweep at 6 min looks back to 1 min: "fast" was full then and untouched since.
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, 1, l.Len())

		// "slow" was idle as long but is still refilling: it was kept, so it still denies.
		// At 6 min 1 s it holds 361/3600 of a token; the rest takes 3239 s.
		res, err := l.Allow(ctx, "slow", slow)
		require.NoError(t, err)
		assert.False(t, res.Allowed)
		assert.Equal(t, 3239*time.Second, res.RetryAfter)
	})
}

// TestCleanupOff: a negative interval turns the sweep off; even a bucket that has long been
// full stays.
func TestCleanupOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(WithCleanupInterval(-1), WithIdleTimeout(-1))
		_, err := l.Allow(context.Background(), "k", perSecond)
		require.NoError(t, err)
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		assert.Equal(t, 1, l.Len())
		require.NoError(t, l.Close())
	})
}

// TestOptionZeroMeansDefault: zero means the default for every option, a negative value turns
// off what can be turned off, and a nil Option is skipped.
func TestOptionZeroMeansDefault(t *testing.T) {
	apply := func(opts ...Option) options {
		o := defaultOptions()
		for _, opt := range opts {
			if opt != nil {
				opt(&o)
			}
		}
		return o
	}
	defaults := defaultOptions()
	assert.Equal(t, defaults, apply(WithCleanupInterval(0), WithIdleTimeout(0), WithMaxBuckets(0), WithAlgorithm(0), nil))
	assert.Equal(t, DefaultMaxBuckets, apply(WithMaxBuckets(-5)).maxBuckets, "the cap cannot be turned off")
	assert.Equal(t, time.Duration(-1), apply(WithCleanupInterval(-1)).cleanupInterval)
	assert.Equal(t, time.Duration(0), apply(WithIdleTimeout(-1)).idleTimeout)
	assert.Equal(t, 7*time.Second, apply(WithCleanupInterval(7*time.Second)).cleanupInterval)

	// A nil Option among others is skipped by New.
	l := New(nil, WithCleanupInterval(-1), nil)
	require.NoError(t, l.Close())
}

// TestCleanupWithoutIdleTime: with the idle wait turned off (a negative WithIdleTimeout) a
// sweep drops every bucket it finds full, and none that is still refilling.
func TestCleanupWithoutIdleTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(WithCleanupInterval(time.Second), WithIdleTimeout(-1))
		defer l.Close()
		ctx := context.Background()
		_, err := l.Allow(ctx, "fast", ratelimit.Limit{Rate: 2, Burst: 1}) // full again at 500 ms
		require.NoError(t, err)
		_, err = l.Allow(ctx, "slow", ratelimit.Limit{Rate: 0.5, Burst: 1}) // at 2 s
		require.NoError(t, err)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, 1, l.Len())
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, 0, l.Len())
	})
}

// TestKeySpray floods a capped limiter with a million distinct keys whose buckets cannot
// refill (the clock stands still). Memory stays at the cap, keys that got a bucket keep it,
// and the rest share one overflow bucket instead of passing unlimited.
func TestKeySpray(t *testing.T) {
	// Ten keys per bucket the cap allows: enough to fill every shard (each sees ~1560 keys
	// for 156 places), a tenth of the decisions a million keys took under -race.
	const keys, maxBuckets = 100_000, 10_000
	clock := ratelimittest.NewClock()
	l := New(WithMaxBuckets(maxBuckets), WithClock(clock.Now), WithCleanupInterval(-1))
	defer l.Close()
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1, Burst: 1}

	admitted := 0
	for i := range keys {
		res, err := l.Allow(ctx, strconv.Itoa(i), limit)
		require.NoError(t, err)
		if res.Allowed {
			admitted++
		}
	}
	// 64 shards of 10000/64 = 156 buckets each: every shard fills.
	require.Equal(t, 64*156, l.Len())
	// One request per tracked key, plus the overflow bucket's single token.
	require.Equal(t, l.Len()+1, admitted)

	// Tracked keys keep their state; so does the overflow bucket.
	for _, key := range []string{"0", "1", "99999"} {
		res, err := l.Allow(ctx, key, limit)
		require.NoError(t, err)
		assert.False(t, res.Allowed, key)
	}

	// Once buckets refill, a new key may take the place of a full one.
	clock.Advance(time.Second)
	res, err := l.Allow(ctx, "new", limit)
	require.NoError(t, err)
	assert.True(t, res.Allowed)
	assert.Equal(t, 64*156, l.Len())
}

// TestEvictionAtCap: with one bucket per shard, a second key in a shard evicts the first
// only once it is full again.
func TestEvictionAtCap(t *testing.T) {
	clock := ratelimittest.NewClock()
	l := New(WithMaxBuckets(64), WithClock(clock.Now), WithCleanupInterval(-1))
	defer l.Close()
	limit := ratelimit.Limit{Rate: 1, Burst: 1}
	spray := func(prefix string) (admitted int) {
		for i := range 2000 {
			res, err := l.Allow(context.Background(), prefix+strconv.Itoa(i), limit)
			require.NoError(t, err)
			if res.Allowed {
				admitted++
			}
		}
		return admitted
	}
	// 64 keys get a bucket, one more gets the overflow token.
	require.Equal(t, 65, spray("a"))
	require.Equal(t, 64, l.Len())
	// A second later every bucket is full: each shard's first new key evicts its full
	// bucket, and the overflow bucket has its token back.
	clock.Advance(time.Second)
	require.Equal(t, 65, spray("b"))
	require.Equal(t, 64, l.Len())
}

// An algorithm that is none of the constants is refused at construction: it could decide
// nothing. CalendarQuota as the default decides only the limits that name an algorithm.
func TestAlgorithmNotSupported(t *testing.T) {
	require.PanicsWithValue(t, "local: New: WithAlgorithm(Algorithm(99)): not one of the ratelimit package's algorithms",
		func() { New(WithAlgorithm(ratelimit.Algorithm(99))) })
	require.Panics(t, func() { New(WithAlgorithm(ratelimit.Algorithm(-1))) })
	l := New(WithAlgorithm(ratelimit.CalendarQuota))
	defer l.Close()
	_, err := l.Allow(context.Background(), "k", perSecond)
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)
	require.ErrorIs(t, l.Wait(context.Background(), "k", perSecond), ratelimit.ErrNotSupported)
}

// TestExtremeLimits: the slowest and fastest limits decide without overflow, and durations
// too long to represent saturate at 2⁵³ µs (285 years), as on the Redis backend, instead of
// wrapping.
func TestExtremeLimits(t *testing.T) {
	clock := ratelimittest.NewClock()
	l := New(WithClock(clock.Now))
	defer l.Close()
	ctx := context.Background()
	day := 24 * time.Hour

	// A token a day, 104,249 of them, the most that refill within 2^53 µs: the whole burst
	// passes at once, then one a day.
	huge := ratelimit.Limit{Rate: 1.0 / 86400, Burst: 104249}
	res, err := l.AllowN(ctx, "huge", huge, huge.Burst)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, 104249*day, res.ResetAfter)
	res, err = l.Allow(ctx, "huge", huge)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	require.Equal(t, day, res.RetryAfter)
	clock.Advance(day)
	res, err = l.Allow(ctx, "huge", huge)
	require.NoError(t, err)
	require.True(t, res.Allowed)

	// A million a second: one token per microsecond.
	fast := ratelimit.Limit{Rate: 1e6, Burst: 1}
	_, err = l.Allow(ctx, "fast", fast)
	require.NoError(t, err)
	res, err = l.Allow(ctx, "fast", fast)
	require.NoError(t, err)
	require.Equal(t, ratelimit.Result{Limit: fast, RetryAfter: time.Microsecond, ResetAfter: time.Microsecond}, res)

	// A bucket that refills in more than 2^53 µs is refused, as on Redis: a day more than
	// the one above, or a rate so small that the next token is past the largest Duration.
	for _, limit := range []ratelimit.Limit{{Rate: 1.0 / 86400, Burst: 104250}, {Rate: 1e-300, Burst: 1}} {
		res, err = l.Allow(ctx, "tiny", limit)
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, "%v", limit)
		require.Equal(t, ratelimit.Result{Limit: limit}, res)
	}
}

// maxDuration is the longest duration a Result holds: 2⁵³ µs.
const maxDuration = (1 << 53) * time.Microsecond

// TestSmallCap: a cap below the shard count still bounds memory, at one bucket a shard.
func TestSmallCap(t *testing.T) {
	l := New(WithMaxBuckets(1), WithCleanupInterval(-1))
	defer l.Close()
	for i := range 1000 {
		_, err := l.Allow(context.Background(), strconv.Itoa(i), perSecond)
		require.NoError(t, err)
	}
	assert.Equal(t, 64, l.Len())
}

// TestAllowAllocatesNothing pins the hot path at zero allocations, allowed and denied.
func TestAllowAllocatesNothing(t *testing.T) {
	l := New()
	defer l.Close()
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1e9, Burst: 1000}
	slow := ratelimit.Limit{Rate: 1e-3, Burst: 1}
	_, _ = l.Allow(ctx, "hot", limit)
	_, _ = l.Allow(ctx, "cold", slow)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = l.Allow(ctx, "hot", limit) }))
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = l.Allow(ctx, "cold", slow) }))
}

// TestInvalidReserves: New refuses reserves that cannot be enforced, saying which.
func TestInvalidReserves(t *testing.T) {
	require.PanicsWithValue(t,
		"local: New: WithReserves: ratelimit: invalid reserves: reserve Sheddable = 0.05 is less than reserve Normal = 0.1: a lower priority must keep back at least as much",
		func() { New(WithReserves(priority.Reserves{Sheddable: 0.05})) })
}
