package local

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/conformance"
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
	limit := ratelimit.Limit{Rate: 1, Burst: 10}   // W = 10 s
	t0 := conformance.NewClock().Now().UnixMicro() // a window boundary
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
			require.ErrorIs(t, err, ratelimit.ErrInvalidLimit, "%v %v", alg, limit)
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

// FuzzFixedWindow checks random timelines against the reference model of
// internal/conformance (see conformance.CheckWindowModel).
func FuzzFixedWindow(f *testing.F) { fuzzWindows(f, ratelimit.FixedWindow) }

// FuzzSlidingWindowCounter checks random timelines against the reference model of
// internal/conformance (see conformance.CheckWindowModel).
func FuzzSlidingWindowCounter(f *testing.F) { fuzzWindows(f, ratelimit.SlidingWindowCounter) }

// fuzzWindows reads a limit and a timeline from the fuzzer's bytes: a burst of 1 to 16, a
// window of 1 µs to 16.7 s, then per request three bytes, two for the gap (0 to 4 windows)
// and one for the cost, up to 500 requests.
func fuzzWindows(f *testing.F, alg ratelimit.Algorithm) {
	f.Add(uint8(9), uint32(10_000_000), []byte("\x00\x00\x07\x00\x10\x00\x00\x40\x03\xff\xff\x00\x01\x02\x03"))
	f.Add(uint8(0), uint32(333_333), []byte("\x00\x00\x00\x00\x00\x00\x00\x40\x00\x00\x40\x00"))
	f.Add(uint8(15), uint32(7), []byte("\x00\x00\x0f\x01\x00\x01\x02\x00\x05\x00\x00\x0f"))
	f.Add(uint8(3), uint32(59_999_999), []byte("\xf0\x3f\x02\x20\x00\x01\x00\x00\x03\x10\x40\x01"))
	f.Fuzz(func(t *testing.T, burst uint8, window uint32, data []byte) {
		b := 1 + int(burst%16)
		w := 1 + int64(window%(1<<24))
		limit := ratelimit.Limit{Rate: float64(b) * 1e6 / float64(w), Burst: b}
		data = data[:min(len(data), 3*500)] // the model's checks grow with the square of this
		arrivals := make([]conformance.WindowArrival, 0, len(data)/3)
		for i := 0; i+2 < len(data); i += 3 {
			gap := (int64(data[i]) | int64(data[i+1])<<8) * w / (1 << 14)
			arrivals = append(arrivals, conformance.WindowArrival{
				Advance: time.Duration(gap) * time.Microsecond,
				N:       1 + int(data[i+2])%b,
			})
		}
		clock := conformance.NewClock()
		l := New(WithClock(clock.Now), WithAlgorithm(alg), WithCleanupInterval(-1))
		defer l.Close()
		h := conformance.Harness{Limiter: l, Advance: clock.Advance, CanWait: true, Algorithm: alg}
		conformance.CheckWindowModel(t, h, clock.Now(), "fuzz", limit, arrivals)
	})
}
