package distributed_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/conformance"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
)

// TestWarmupAgreesWithLocal plays the same random timelines on the local token bucket with a
// warm-up and on warmup.lua and requires identical Results, to the bit: the two do the same
// float64 operations on the same microsecond clock, and search the same integers with the
// same tests. The limits run from a token a day to the Redis backend's maximum rate, with
// warm-ups from 1 µs to a year; the gaps from nothing to many warm-ups, so that buckets
// ramp, rest, go cold and start over; half the requests carry a random priority.
func TestWarmupAgreesWithLocal(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr()) // outside the bubbles: see TestWindowsAgreeWithLocal
	rng := rand.New(rand.NewPCG(18, 18))
	limits := []ratelimit.Limit{
		{Rate: 100, Burst: 50, Warmup: time.Second},
		{Rate: 1, Burst: 2, Warmup: time.Minute},
		{Rate: 3, Burst: 7, Warmup: 1500 * time.Millisecond},
		{Rate: 100.0 / 60, Burst: 100, Warmup: 10 * time.Minute},
		{Rate: 1.0 / 86400, Burst: 5, Warmup: 7 * 24 * time.Hour},
		{Rate: 123_456.789, Burst: 1000, Warmup: 3 * time.Microsecond},
		{Rate: distributed.MaxRate, Burst: 1e9, Warmup: time.Second},
		{Rate: 10, Burst: 1, Warmup: time.Microsecond},
		{Rate: distributed.MaxRate, Burst: ratelimit.MaxBurst, Warmup: ratelimit.MaxWarmup},
		{Rate: 5e5, Burst: ratelimit.MaxBurst, Warmup: time.Hour},
	}
	for range 8 { // and some no one would choose
		limits = append(limits, ratelimit.Limit{
			Rate:   math.Exp(rng.Float64()*math.Log(distributed.MaxRate*86400)) / 86400,
			Burst:  1 + rng.IntN(1<<rng.IntN(30)),
			Warmup: time.Duration(1+rng.Int64N(1<<rng.IntN(45))) * time.Microsecond, // up to a year
		})
	}
	for i, limit := range limits {
		t.Run(limit.String(), func(t *testing.T) {
			conformance.InBubble(t, func(t *testing.T) {
				clock := conformance.SystemClock()
				loc := local.New(local.WithCleanupInterval(-1))
				t.Cleanup(func() { loc.Close() })
				red := newLimiter(t, client, clock)
				rng := rand.New(rand.NewPCG(uint64(i), 18))
				interval := 1e6 / limit.Rate // µs
				period := float64(limit.Warmup.Microseconds())
				ctx := context.Background()
				allowed, denied := 0, 0
				for j := range 400 {
					var gap float64 // µs
					switch rng.IntN(7) {
					case 1:
						gap = rng.Float64() * interval
					case 2:
						gap = rng.Float64() * 3 * interval
					case 3:
						gap = rng.Float64() * float64(limit.Burst) * interval
					case 4:
						gap = float64(rng.IntN(3)) // a microsecond or two
					case 5:
						gap = rng.Float64() * period / 4
					case 6:
						gap = rng.Float64() * (2*period + 2*float64(limit.Burst)*interval) // often cold
					}
					clock.Advance(time.Duration(min(gap, 1e13)) * time.Microsecond) // 116 days at most
					n := 1 + rng.IntN(min(limit.Burst, 4))
					if rng.IntN(4) == 0 {
						n = 1 + rng.IntN(limit.Burst)
					}
					// A priority, one request in two: the reserve of the lower ones is decided
					// alike too, and a cost above the burst left to a priority refused alike.
					pctx := ctx
					if rng.IntN(2) == 0 {
						pctx = ratelimit.WithPriority(ctx, ratelimit.Priority(rng.IntN(3)))
					}
					want, werr := loc.AllowN(pctx, "k", limit, n)
					got, err := red.AllowN(pctx, "k", limit, n)
					if werr != nil {
						require.ErrorIs(t, werr, ratelimit.ErrExceedsBurst)
						require.ErrorIs(t, err, ratelimit.ErrExceedsBurst)
						continue
					}
					require.NoError(t, err)
					require.Equal(t, want, got, "request %d: n=%d at %v, %v", j, n, clock.Now(), ratelimit.PriorityFrom(pctx))
					if got.Allowed {
						allowed++
					} else {
						denied++
					}
				}
				require.Positive(t, allowed)
				require.Positive(t, denied)
			})
		})
	}
}
