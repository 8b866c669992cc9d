package local

import (
	"context"
	"encoding/binary"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/conformance"
)

// harness returns a fresh limiter of algorithm a on a conformance clock.
func harness(t *testing.T, a ratelimit.Algorithm) conformance.Harness {
	clock := conformance.NewClock()
	l := New(WithClock(clock.Now), WithAlgorithm(a), WithCleanupInterval(-1))
	t.Cleanup(func() { l.Close() })
	return conformance.Harness{Limiter: l, Advance: clock.Advance, CanWait: true, Algorithm: a}
}

// TestSlidingLogModel plays random timelines, from fixed seeds, against the reference model
// of conformance.CheckSlidingLog, on limits from a single token to a thousand.
func TestSlidingLogModel(t *testing.T) {
	cases := []struct {
		limit      ratelimit.Limit
		maxAdvance time.Duration
		maxN       int
	}{
		{ratelimit.Limit{Rate: 1, Burst: 1}, 1500 * time.Millisecond, 1},
		{ratelimit.Limit{Rate: 3, Burst: 2}, 400 * time.Millisecond, 2},  // W = 666,667 µs
		{ratelimit.Limit{Rate: 100, Burst: 7}, 30 * time.Millisecond, 7}, // W = 70 ms
		{ratelimit.Limit{Rate: 1e6, Burst: 3}, 2 * time.Microsecond, 2},  // W = 3 µs
		{ratelimit.PerMinute(1000), 200 * time.Millisecond, 20},          // W = 60 s
		{ratelimit.Limit{Rate: 0.5, Burst: 40}, 3 * time.Second, 5},      // W = 80 s
	}
	for i, c := range cases {
		t.Run(c.limit.String(), func(t *testing.T) {
			ops := conformance.RandomOps(uint64(100+i), 2000, c.maxAdvance, c.maxN)
			conformance.CheckSlidingLog(t, harness(t, ratelimit.SlidingWindowLog), c.limit, ops)
		})
	}
}

// FuzzSlidingLog checks the sliding log against its reference model on timelines decoded
// from the input: a burst (1 to 32), a window (1 µs to 65 ms), then 3 bytes per request,
// two for the clock's advance (up to twice the window) and one for the cost.
func FuzzSlidingLog(f *testing.F) {
	f.Add(uint8(3), uint16(1000), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 0})
	f.Add(uint8(1), uint16(1), []byte{1, 0, 0, 2, 0, 0, 0, 0, 0})
	f.Add(uint8(32), uint16(65535), []byte{9, 200, 31, 0, 0, 4, 128, 0, 7, 255, 255, 1})
	f.Fuzz(func(t *testing.T, burst uint8, window uint16, data []byte) {
		b := 1 + int(burst)%32
		w := 1 + int64(window)
		limit := ratelimit.Limit{Rate: float64(b) * 1e6 / float64(w), Burst: b}
		var ops []conformance.Op
		for ; len(data) >= 3 && len(ops) < 500; data = data[3:] {
			advance := int64(binary.LittleEndian.Uint16(data)) * 2 * w / 65535
			ops = append(ops, conformance.Op{Advance: time.Duration(advance) * time.Microsecond, N: 1 + int(data[2])%b})
		}
		conformance.CheckSlidingLog(t, harness(t, ratelimit.SlidingWindowLog), limit, ops)
	})
}

// TestSlidingLogGrowsAndStops: the log allocates as it grows towards Burst entries, and
// nothing after that, whether it admits or denies.
func TestSlidingLogGrowsAndStops(t *testing.T) {
	clock := conformance.NewClock()
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
	clock := conformance.NewClock()
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
