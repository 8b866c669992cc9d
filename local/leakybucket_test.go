package local

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/conformance"
)

// TestLeakyBucketModel plays random timelines, from fixed seeds, against the reference
// shaper of conformance.CheckLeakyBucket, from one request a day to a million a second.
func TestLeakyBucketModel(t *testing.T) {
	day := 24 * time.Hour
	cases := []struct {
		limit      ratelimit.Limit
		maxAdvance time.Duration
		maxN       int
	}{
		{ratelimit.Limit{Rate: 1e6 / 1024, Burst: 1}, 2 * time.Millisecond, 1}, // T = 1024 µs
		{ratelimit.Limit{Rate: 1e6 / 1024, Burst: 9}, 3 * time.Millisecond, 4},
		{ratelimit.Limit{Rate: 3, Burst: 5}, 500 * time.Millisecond, 3},      // T = 333,333.3 µs
		{ratelimit.Limit{Rate: 7.5, Burst: 20}, 300 * time.Millisecond, 6},   // T = 133,333.3 µs
		{ratelimit.Limit{Rate: 300000, Burst: 50}, 20 * time.Microsecond, 5}, // T = 3.3 µs
		{ratelimit.Limit{Rate: 1e6, Burst: 10}, 3 * time.Microsecond, 4},     // T = 1 µs
		{ratelimit.Limit{Rate: 1.0 / 86400, Burst: 3}, 2 * day, 2},           // T = 1 day
	}
	for i, c := range cases {
		t.Run(c.limit.String(), func(t *testing.T) {
			ops := conformance.RandomOps(uint64(200+i), 2000, c.maxAdvance, c.maxN)
			conformance.CheckLeakyBucket(t, harness(t, ratelimit.LeakyBucket), c.limit, ops)
		})
	}
}

// leakyRates are the rates FuzzLeakyBucket picks from: binary and fractional intervals.
var leakyRates = []float64{1e6 / 1024, 3, 7.5, 10, 300000, 1e6, 1.0 / 3600, 1e6 / 3}

// FuzzLeakyBucket checks the shaper against its reference model on timelines decoded from
// the input: a rate (from leakyRates) and a burst (1 to 16), then 3 bytes per request, two
// for the clock's advance (up to four intervals) and one for the cost.
func FuzzLeakyBucket(f *testing.F) {
	f.Add(uint8(0), uint8(4), []byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 255, 255, 2})
	f.Add(uint8(1), uint8(0), []byte{1, 0, 0, 255, 63, 0, 0, 0, 0})
	f.Add(uint8(4), uint8(15), []byte{9, 200, 3, 0, 0, 4, 128, 0, 7, 255, 255, 1})
	f.Add(uint8(7), uint8(2), []byte{0, 64, 0, 0, 0, 1, 0, 128, 2, 3, 0, 0})
	f.Fuzz(func(t *testing.T, rate, burst uint8, data []byte) {
		limit := ratelimit.Limit{Rate: leakyRates[int(rate)%len(leakyRates)], Burst: 1 + int(burst)%16}
		period := 1e6 / limit.Rate // µs
		var ops []conformance.Op
		for ; len(data) >= 3 && len(ops) < 500; data = data[3:] {
			advance := float64(binary.LittleEndian.Uint16(data)) * 4 * period / 65535
			ops = append(ops, conformance.Op{
				Advance: time.Duration(advance) * time.Microsecond,
				N:       1 + int(data[2])%limit.Burst,
			})
		}
		conformance.CheckLeakyBucket(t, harness(t, ratelimit.LeakyBucket), limit, ops)
	})
}

// TestLeakyBucketDoesNotDrift: at 300,000/s, T = 3.33 µs. A thousand requests at once leave
// at k·T, to the nearest microsecond; a schedule kept in whole microseconds would move 3 µs
// a request and let 1,111 in.
func TestLeakyBucketDoesNotDrift(t *testing.T) {
	h := harness(t, ratelimit.LeakyBucket)
	limit := ratelimit.Limit{Rate: 300000, Burst: 1000}
	ctx := context.Background()
	for k := range 1000 {
		res, err := h.Limiter.Allow(ctx, "k", limit)
		require.NoError(t, err)
		require.True(t, res.Allowed, "request %d", k)
		turn := (int64(k)*20 + 3) / 6 // k·10/3 µs rounded: k·10 mod 3 is 0, 1 or 2
		require.Equal(t, time.Duration(turn)*time.Microsecond, res.Delay, "request %d", k)
	}
	res, err := h.Limiter.Allow(ctx, "k", limit)
	require.NoError(t, err)
	assert.False(t, res.Allowed)
	// A millisecond drains exactly 300 places.
	h.Advance(time.Millisecond)
	res, err = h.Limiter.AllowN(ctx, "k", limit, 300)
	require.NoError(t, err)
	assert.True(t, res.Allowed)
	res, err = h.Limiter.Allow(ctx, "k", limit)
	require.NoError(t, err)
	assert.False(t, res.Allowed)
}

// TestLeakyBucketExtremes: the ends of the supported range decide exactly; a queue that
// would take longer than 2^53 µs to drain is refused, as on Redis.
func TestLeakyBucketExtremes(t *testing.T) {
	h := harness(t, ratelimit.LeakyBucket)
	ctx := context.Background()
	us, day := time.Microsecond, 24*time.Hour
	charge := ratelimit.Charge{At: conformance.NewClock().Now()} // the clock never moves here

	fast := ratelimit.Limit{Rate: 1e6, Burst: 1e9}
	res, err := h.Limiter.AllowN(ctx, "fast", fast, 1e9)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Result{Allowed: true, Limit: fast, ResetAfter: 1000 * time.Second, Charge: charge}, res)
	res, err = h.Limiter.Allow(ctx, "fast", fast)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Result{Limit: fast, RetryAfter: us, ResetAfter: 1000 * time.Second}, res)

	// The longest queue there is: 104,249 days to drain, just under 2^53 µs.
	const longest = 104249
	slow := ratelimit.Limit{Rate: 1.0 / 86400, Burst: longest}
	res, err = h.Limiter.AllowN(ctx, "slow", slow, 2)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Result{Allowed: true, Limit: slow, Remaining: longest - 2, ResetAfter: 2 * day, Charge: charge}, res)
	res, err = h.Limiter.AllowN(ctx, "slow", slow, longest-2)
	require.NoError(t, err)
	assert.Equal(t, longest*day, res.ResetAfter)
	assert.Equal(t, 2*day, res.Delay)

	_, err = h.Limiter.Allow(ctx, "faster", ratelimit.Limit{Rate: 1.5e6, Burst: 1})
	require.ErrorIs(t, err, ratelimit.ErrInvalidLimit)
	_, err = h.Limiter.Allow(ctx, "longer", ratelimit.Limit{Rate: 1.0 / 86400, Burst: longest + 1})
	require.ErrorIs(t, err, ratelimit.ErrInvalidLimit, "a queue that drains in more than 2^53 µs")
}

// TestLeakyBucketAllocatesNothing pins the shaper's hot path at zero allocations.
func TestLeakyBucketAllocatesNothing(t *testing.T) {
	l := New(WithAlgorithm(ratelimit.LeakyBucket))
	defer l.Close()
	ctx := context.Background()
	open := ratelimit.Limit{Rate: 1e6, Burst: 1e9}
	full := ratelimit.Limit{Rate: 1e-3, Burst: 1}
	_, _ = l.Allow(ctx, "open", open)
	_, _ = l.Allow(ctx, "full", full)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = l.Allow(ctx, "open", open) }))
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = l.Allow(ctx, "full", full) }))
}
