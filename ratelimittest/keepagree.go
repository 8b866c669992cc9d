package ratelimittest

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
)

// keepFamilies are the limits agreeKeep moves one key between, per algorithm, all with
// KeepUsage: token and leaky buckets of rates and bursts up and down; windows of one
// length, 10 s, and one of another, a bucket of its own; sliding logs of windows from 0.2 s
// to 30 s.
func keepFamilies(alg ratelimit.Algorithm) []ratelimit.Limit {
	var ls []ratelimit.Limit
	switch alg {
	case ratelimit.TokenBucket, ratelimit.LeakyBucket:
		ls = []ratelimit.Limit{{Rate: 1, Burst: 5}, {Rate: 3, Burst: 2}, {Rate: 0.25, Burst: 20},
			{Rate: 1000, Burst: 100}, {Rate: 7.3, Burst: 13}, {Rate: 1.0 / 3600, Burst: 3}}
	case ratelimit.FixedWindow, ratelimit.SlidingWindowCounter:
		ls = []ratelimit.Limit{{Rate: 1, Burst: 10}, {Rate: 0.5, Burst: 5}, {Rate: 2, Burst: 20},
			{Rate: 0.1, Burst: 1}, {Rate: 1, Burst: 3}}
	case ratelimit.SlidingWindowLog:
		ls = []ratelimit.Limit{{Rate: 1, Burst: 5}, {Rate: 2, Burst: 20}, {Rate: 0.1, Burst: 3},
			{Rate: 10, Burst: 2}, {Rate: 0.5, Burst: 8}}
	}
	for i := range ls {
		ls[i].Algorithm, ls[i].KeepUsage = alg, true
	}
	return ls
}

// agreeKeep plays random timelines of decisions, peeks and refunds at random priorities on
// one key whose limit changes at random among keepFamilies(alg), and requires identical
// answers from every harness, to the bit. Peeks and refunds are played on limiters that are
// Inspectors.
func agreeKeep(t *testing.T, all []Harness, alg ratelimit.Algorithm) {
	family := keepFamilies(alg)
	for seed := range uint64(6) {
		t.Run(string(rune('A'+seed)), func(t *testing.T) {
			clock := NewClock()
			ls := make([]ratelimit.Limiter, len(all))
			inspect := true
			for k, h := range all {
				ls[k] = h.New(t, Config{Algorithm: alg, Clock: clock})
				_, ok := ratelimit.As[ratelimit.Inspector](ls[k])
				inspect = inspect && ok
			}
			rng := rand.New(rand.NewPCG(seed, 24))
			ctx := context.Background()
			var charges []ratelimit.Charge
			allowed, denied := 0, 0
			limit := family[0]
			for j := range 500 {
				if rng.IntN(4) == 0 {
					limit = family[rng.IntN(len(family))]
				}
				// Up to a little more than the limit's window: Burst/Rate.
				gap := rng.Int64N(int64(float64(limit.Burst)/limit.Rate*1.3e6) + 1)
				if rng.IntN(3) == 0 {
					gap = rng.Int64N(3)
				}
				clock.Advance(time.Duration(gap) * time.Microsecond)
				n := 1 + rng.IntN(min(limit.Burst, 3))
				op := rng.IntN(10)
				if !inspect {
					op = 0
				}
				// A priority below Critical leaves its reserve (the limiters' default ones).
				pctx := priority.With(ctx, []priority.Level{priority.Critical, priority.Normal, priority.Sheddable}[rng.IntN(3)])
				var want ratelimit.Result
				var wantErr error
				for k, l := range ls {
					var got ratelimit.Result
					var err error
					switch {
					case op < 7:
						got, err = l.AllowN(pctx, "k", limit, n)
					case op < 9:
						got, err = capability[ratelimit.Inspector](l).Peek(pctx, "k", limit, n)
					default:
						var c ratelimit.Charge
						if len(charges) > 0 && rng.IntN(3) > 0 {
							c = charges[len(charges)-1-rng.IntN(min(len(charges), 4))]
						}
						if k > 0 {
							c = charges[len(charges)-1] // the one drawn for limiter 0, below
						} else {
							charges = append(charges, c)
						}
						got, err = capability[ratelimit.Inspector](l).Refund(pctx, "k", limit, n, c)
					}
					if k == 0 {
						want, wantErr = got, err
						continue
					}
					if wantErr != nil {
						// A cost above what the priority may take is refused alike.
						require.ErrorIs(t, wantErr, ratelimit.ErrExceedsBurst, "call %d", j)
						require.ErrorIs(t, err, ratelimit.ErrExceedsBurst, "limiter %d, call %d", k, j)
						continue
					}
					require.NoError(t, err, "limiter %d, call %d", k, j)
					require.Equal(t, want, got, "limiter %d, call %d (op %d, n=%d) at %v under %v", k, j, op, n, clock.Now(), limit)
				}
				if wantErr != nil {
					continue
				}
				if op < 7 && want.Allowed {
					allowed++
					charges = append(charges, want.Charge)
				} else if op < 7 {
					denied++
				}
			}
			require.Positive(t, allowed)
			require.Positive(t, denied)
		})
	}
}
