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

// TestTokenBucketAgreesWithLocal plays the same random timelines on the local token bucket
// and on gcra.lua and requires identical Results: the two do the same float64 operations
// on the same microsecond clock, so they must agree to the bit, on every field, however the
// rate and the arrivals fall. The limits run from one token a day to the Redis backend's
// maximum, with bursts up to 10⁹ and costs up to the burst; the gaps from nothing to many
// refills, on whole microseconds of synctest's clock, which both limiters read.
func TestTokenBucketAgreesWithLocal(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr()) // outside the bubbles: see TestWindowsAgreeWithLocal
	rng := rand.New(rand.NewPCG(17, 17))
	limits := []ratelimit.Limit{
		{Rate: 1, Burst: 2},
		{Rate: 3, Burst: 7},
		ratelimit.PerMinute(100),
		{Rate: 1.0 / 86400, Burst: 5},
		{Rate: 123_456.789, Burst: 1000},
		{Rate: distributed.MaxRate, Burst: 1e9},
	}
	for range 6 { // and some no one would choose
		limits = append(limits, ratelimit.Limit{
			Rate:  math.Exp(rng.Float64()*math.Log(distributed.MaxRate*86400)) / 86400,
			Burst: 1 + rng.IntN(1<<rng.IntN(30)),
		})
	}
	for i, limit := range limits {
		t.Run(limit.String(), func(t *testing.T) {
			conformance.InBubble(t, func(t *testing.T) {
				clock := conformance.SystemClock()
				loc := local.New(local.WithCleanupInterval(-1))
				t.Cleanup(func() { loc.Close() })
				red := newLimiter(t, client, clock)
				rng := rand.New(rand.NewPCG(uint64(i), 71))
				interval := 1e6 / limit.Rate // µs
				ctx := context.Background()
				allowed, denied := 0, 0
				for j := range 400 {
					var gap float64 // µs
					switch rng.IntN(5) {
					case 1:
						gap = rng.Float64() * interval
					case 2:
						gap = rng.Float64() * 3 * interval
					case 3:
						gap = rng.Float64() * float64(limit.Burst) * interval
					case 4:
						gap = float64(rng.IntN(3)) // a microsecond or two
					}
					clock.Advance(time.Duration(min(gap, 1e13)) * time.Microsecond) // 116 days at most
					n := 1 + rng.IntN(min(limit.Burst, 4))
					if rng.IntN(4) == 0 {
						n = 1 + rng.IntN(limit.Burst)
					}
					want, err := loc.AllowN(ctx, "k", limit, n)
					require.NoError(t, err)
					got, err := red.AllowN(ctx, "k", limit, n)
					require.NoError(t, err)
					require.Equal(t, want, got, "request %d: n=%d at %v", j, n, clock.Now())
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
