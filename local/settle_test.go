package local_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestSettleNoDrift: a million settles of random estimates to random actuals on one token
// bucket (1000/s, Burst 1000, so a token is exactly 1 ms) leave it exactly where integer
// arithmetic says, to the microsecond: the model counts the tokens the bucket is short of
// full, d, in [0, 2000]; an underrun lowers it (not below 0, a full bucket), an overrun raises
// it unless it would pass 2000 (refused), and the clock moves by whole milliseconds, each
// lowering d by one. ResetAfter is then d ms exactly (d + 1 with Peek's token), checked
// every 1000 settles.
func TestSettleNoDrift(t *testing.T) {
	clock := ratelimittest.NewClock()
	l := local.New(local.WithClock(clock.Now), local.WithCleanupInterval(0))
	t.Cleanup(func() { _ = l.Close() })
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1000, Burst: 1000}
	rng := rand.New(rand.NewPCG(40, 6))
	d := 0
	for i := range 1_000_000 {
		reserved, actual := rng.IntN(40), rng.IntN(40)
		res, err := l.Settle(ctx, "k", limit, ratelimit.Charge{}, reserved, actual)
		// Plain tests, not require's, on this path: a million calls.
		if over := actual - reserved; d+over > 2*limit.Burst {
			if !errors.Is(err, ratelimit.ErrExceedsBurst) {
				t.Fatalf("settle %d: %v, want ErrExceedsBurst", i, err)
			}
		} else {
			if err != nil {
				t.Fatalf("settle %d: %v", i, err)
			}
			d = max(d+over, 0)
		}
		if i%1000 == 999 {
			// The answer is Peek's for one token, which counts that token as taken
			// when the bucket has it.
			want := time.Duration(d) * time.Millisecond
			if d < limit.Burst {
				want += time.Millisecond
			}
			require.Equal(t, want, res.ResetAfter, "after %d settles", i+1)
			step := rng.IntN(d + 1)
			clock.Advance(time.Duration(step) * time.Millisecond)
			d -= step
		}
	}
}

// TestHoldIsACharge: a hold in process is a charge, which a settle ends: three of five held,
// settled to one, leave four; a ttl under 1 µs is refused, charging nothing.
func TestHoldIsACharge(t *testing.T) {
	ctx := context.Background()
	l := local.New(local.WithCleanupInterval(0))
	t.Cleanup(func() { _ = l.Close() })
	limit := ratelimit.Limit{Rate: 5.0 / 3600, Burst: 5}
	res, err := l.Hold(ctx, "k", limit, 3, time.Minute)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, 2, res.Remaining)
	settled, err := l.Settle(ctx, "k", limit, res.Charge, 3, 1)
	require.NoError(t, err)
	require.Equal(t, 3, settled.Remaining, "a peek for one after the settle")
	_, err = l.Hold(ctx, "k", limit, 1, 0)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	peek, err := l.Peek(ctx, "k", limit, 1)
	require.NoError(t, err)
	require.Equal(t, 3, peek.Remaining, "the refused hold charged nothing")
}
