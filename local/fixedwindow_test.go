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

// windowAlgorithms are the algorithms of fixed, epoch-aligned windows.
var windowAlgorithms = []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.SlidingWindowCounter}

func TestSplit(t *testing.T) {
	cases := []struct{ u, w, index, elapsed int64 }{
		{0, 10, 0, 0},
		{9, 10, 0, 9},
		{10, 10, 1, 0},
		{1767225600_000000, 60_000000, 29453760, 0},
		{1767225600_000001, 7, 252460800000000, 1},
		// Before 1970 the index rounds down too, so that elapsed stays in [0, w).
		{-1, 10, -1, 9},
		{-10, 10, -1, 0},
		{-11, 10, -2, 9},
	}
	for _, c := range cases {
		index, elapsed := split(c.u, c.w)
		assert.Equal(t, [2]int64{c.index, c.elapsed}, [2]int64{index, elapsed}, "split(%d, %d)", c.u, c.w)
	}
}

// TestWindowFull: a bucket reports itself full (droppable) only once every window it counted
// in has stopped weighing, and never about a time before its last admission; packed in a
// word or kept under a mutex alike.
func TestWindowFull(t *testing.T) {
	limit := ratelimit.Limit{Rate: 1, Burst: 10}     // W = 10 s
	t0 := ratelimittest.NewClock().Now().UnixMicro() // a window boundary
	at := func(d time.Duration) int64 { return t0 + d.Microseconds() }
	cases := []struct {
		alg       ratelimit.Algorithm
		fullAfter time.Duration // from here on the bucket is full; before, it is not
	}{
		{ratelimit.FixedWindow, 10 * time.Second},          // the end of its window
		{ratelimit.SlidingWindowCounter, 20 * time.Second}, // the end of the next
	}
	for _, c := range cases {
		for _, kind := range bucketKinds {
			t.Run(c.alg.String()+"/"+kind, func(t *testing.T) {
				s, b := testBucket(t, c.alg, kind, limit, at(0))
				assert.True(t, isFull(s, b, at(0)), "a new bucket is full")
				v, _, ok := s.take(b, limit, at(3*time.Second), windowFor(c.alg, limit.Rate, limit.Burst), 1, unbounded)
				require.True(t, ok)
				require.True(t, v.allowed)
				for _, d := range []time.Duration{-time.Hour, 0, 3 * time.Second, c.fullAfter - time.Microsecond} {
					assert.False(t, isFull(s, b, at(d)), "at %v", d)
				}
				for _, d := range []time.Duration{c.fullAfter, c.fullAfter + time.Hour} {
					assert.True(t, isFull(s, b, at(d)), "at %v", d)
				}
			})
		}
	}
}

// TestWindowCleanup: the sweep drops a window bucket once it has been full for the idle
// timeout, as it does a token bucket.
func TestWindowCleanup(t *testing.T) {
	for _, c := range []struct {
		alg  ratelimit.Algorithm
		gone time.Duration // the first sweep that drops the bucket
	}{
		// synctest's clock starts on a minute. W = 1 min; sweeps every minute look back 5.
		// Fixed: full from 1 min on, so the sweep at 6 min drops it; counter: from 2 min, 7.
		{ratelimit.FixedWindow, 6 * time.Minute},
		{ratelimit.SlidingWindowCounter, 7 * time.Minute},
	} {
		t.Run(c.alg.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := New(WithAlgorithm(c.alg))
				defer l.Close()
				_, err := l.Allow(context.Background(), "k", ratelimit.PerMinute(5))
				require.NoError(t, err)
				time.Sleep(c.gone - time.Second)
				synctest.Wait()
				require.Equal(t, 1, l.Len())
				time.Sleep(time.Second)
				synctest.Wait()
				require.Equal(t, 0, l.Len())
			})
		})
	}
}

// TestWindowWait: Wait sleeps exactly until the window lets the request in.
func TestWindowWait(t *testing.T) {
	for _, c := range []struct {
		alg  ratelimit.Algorithm
		wait time.Duration
	}{
		// W = 1 s. Fixed: the window's end, 700 ms after 300 ms. Counter: with Burst 1 the
		// estimate must fall to 0, at the start of the window after next, 1.7 s away.
		{ratelimit.FixedWindow, 700 * time.Millisecond},
		{ratelimit.SlidingWindowCounter, 1700 * time.Millisecond},
	} {
		t.Run(c.alg.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := New(WithAlgorithm(c.alg))
				defer l.Close()
				ctx := context.Background()
				limit := ratelimit.Limit{Rate: 1, Burst: 1}
				time.Sleep(300 * time.Millisecond)
				require.NoError(t, l.Wait(ctx, "k", limit))
				start := time.Now()
				require.NoError(t, l.Wait(ctx, "k", limit))
				assert.Equal(t, c.wait, time.Since(start))
			})
		})
	}
}

// TestWindowInvalidLimit: a window outside [1 µs, 2⁵³ µs] is refused up front, with the
// Redis backend's error, before any bucket is made.
func TestWindowInvalidLimit(t *testing.T) {
	for _, alg := range windowAlgorithms {
		l := New(WithAlgorithm(alg))
		defer l.Close()
		for _, limit := range []ratelimit.Limit{{Rate: 3e6, Burst: 1}, {Rate: 1e-6, Burst: 9008}} {
			_, err := l.Allow(context.Background(), "k", limit)
			require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, "%v %v", alg, limit)
		}
		assert.Zero(t, l.Len())
	}
}

// TestWindowAllocatesNothing pins the window algorithms' hot path at zero allocations,
// allowed and denied.
func TestWindowAllocatesNothing(t *testing.T) {
	for _, alg := range windowAlgorithms {
		l := New(WithAlgorithm(alg))
		defer l.Close()
		ctx := context.Background()
		open := ratelimit.Limit{Rate: 1e9, Burst: 1e9}
		shut := ratelimit.Limit{Rate: 1e-6, Burst: 1}
		_, _ = l.Allow(ctx, "open", open)
		_, _ = l.Allow(ctx, "shut", shut)
		assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = l.Allow(ctx, "open", open) }), "%v", alg)
		assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = l.Allow(ctx, "shut", shut) }), "%v", alg)
	}
}
