package local

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// clocked is a limiter and the clock it reads.
type clocked struct {
	Limiter *Limiter
	clock   *ratelimittest.Clock
}

// Advance moves the limiter's clock.
func (c clocked) Advance(d time.Duration) { c.clock.Advance(d) }

// harness returns a fresh limiter of algorithm a on a clock the test moves.
func harness(t *testing.T, a ratelimit.Algorithm) clocked {
	clock := ratelimittest.NewClock()
	l := New(WithClock(clock.Now), WithAlgorithm(a), WithCleanupInterval(-1))
	t.Cleanup(func() { l.Close() })
	return clocked{Limiter: l, clock: clock}
}

// TestSlidingLogGrowsAndStops: the log allocates as it grows towards Burst entries, and
// nothing after that, whether it admits or denies.
func TestSlidingLogGrowsAndStops(t *testing.T) {
	clock := ratelimittest.NewClock()
	l := New(WithClock(clock.Now), WithAlgorithm(ratelimit.SlidingWindowLog), WithCleanupInterval(-1))
	defer l.Close()
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1000, Burst: 1000} // W = 1 s
	for i := range 1000 {
		if i > 0 {
			clock.Advance(time.Millisecond)
		}
		res, err := l.Allow(ctx, "k", limit)
		require.NoError(t, err)
		require.True(t, res.Allowed)
	}
	// Full, entries from 0 to 999 ms: denials allocate nothing.
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = l.Allow(ctx, "k", limit) }))
	// A millisecond at a time, one entry leaves and one comes: the ring is big enough.
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		clock.Advance(time.Millisecond)
		res, _ := l.Allow(ctx, "k", limit)
		if !res.Allowed {
			panic("denied")
		}
	}))
}

// TestSlidingLogClockStepsBack: an injected clock that goes back is read as standing still
// at the newest entry, so the log stays in order and no entry leaves early.
func TestSlidingLogClockStepsBack(t *testing.T) {
	clock := ratelimittest.NewClock()
	now := clock.Now()
	l := New(WithClock(func() time.Time { return now }), WithAlgorithm(ratelimit.SlidingWindowLog))
	defer l.Close()
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1, Burst: 2} // W = 2 s
	_, err := l.Allow(ctx, "k", limit)
	require.NoError(t, err)
	now = now.Add(time.Second)
	_, err = l.Allow(ctx, "k", limit)
	require.NoError(t, err)
	// Back by a second: the window is read at the newest entry (1 s), where it is full; the
	// first entry leaves at 2 s, a second after the newest.
	now = now.Add(-time.Second)
	res, err := l.Allow(ctx, "k", limit)
	require.NoError(t, err)
	want := ratelimit.Result{Limit: limit, RetryAfter: time.Second, ResetAfter: 2 * time.Second}
	assert.Equal(t, want, res)
}

// TestSlidingLogCleanup: a sweep drops a log only once its newest entry has left the window.
func TestSlidingLogCleanup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(WithAlgorithm(ratelimit.SlidingWindowLog)) // sweeps every minute, idle 5 min
		defer l.Close()
		ctx := context.Background()
		short := ratelimit.Limit{Rate: 1, Burst: 5}         // W = 5 s
		long := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 2} // W = 2 h
		_, err := l.Allow(ctx, "short", short)
		require.NoError(t, err)
		_, err = l.Allow(ctx, "long", long)
		require.NoError(t, err)

		// The sweep at 6 min looks back to 1 min: "short" was empty then.
		time.Sleep(6*time.Minute + time.Second)
		synctest.Wait()
		require.Equal(t, 1, l.Len())
		// "long" was kept: its entry is still in the window and still counts.
		res, err := l.AllowN(ctx, "long", long, 2)
		require.NoError(t, err)
		assert.False(t, res.Allowed)
		assert.Equal(t, 2*time.Hour-6*time.Minute-time.Second, res.RetryAfter)
	})
}
