package ratelimittest

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/priority"
)

// maxRate is the highest rate Agree asks for: a token a microsecond, the resolution of the
// clocks every backend of this module reads.
const maxRate = 1e6

// Agree plays the same random timelines on limiters of a, b and more, made on one shared
// Clock, and requires identical answers, field by field and to the bit, where the rules of
// Run allow rounding: far from round numbers, with rates from a token a day to 10⁶ a second,
// bursts up to 10⁹ and windows up to centuries. It plays, for the algorithms every harness
// implements: the token bucket (and its warm-up, with random priorities, when every harness
// declares Warmup), the fixed window, the sliding window counter, and calendar quotas in
// zones with changes of offset (when every harness declares Quotas). Run checks the sliding
// log and the leaky bucket against reference models instead. When every harness declares
// KeepUsage, it also plays, for every algorithm, timelines whose limit changes between
// calls, with peeks and refunds (see agreeKeep). Every harness must have ClockInjected.
func Agree(t *testing.T, a, b Harness, more ...Harness) {
	t.Helper()
	all := append([]Harness{a, b}, more...)
	warm, quotas, keep := true, true, true
	common := Algorithms()
	for _, h := range all {
		require.Equal(t, ClockInjected, h.Clock, "Agree moves the clocks it gives")
		warm = warm && h.Warmup
		quotas = quotas && h.Quotas
		keep = keep && h.KeepUsage
		common = slices.DeleteFunc(common, func(alg ratelimit.Algorithm) bool {
			return !slices.Contains(h.algorithms(), alg)
		})
	}
	if slices.Contains(common, ratelimit.TokenBucket) {
		t.Run("TokenBucket", func(t *testing.T) { agreeTimelines(t, all, ratelimit.TokenBucket, bucketLimits(), bucketGap, 71) })
		if warm {
			t.Run("Warmup", func(t *testing.T) { agreeTimelines(t, all, ratelimit.TokenBucket, warmLimits(), warmGap, 18) })
		}
	}
	for _, alg := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.SlidingWindowCounter} {
		if slices.Contains(common, alg) {
			t.Run(alg.String(), func(t *testing.T) { agreeTimelines(t, all, alg, windowLimits, windowGap, 7) })
		}
	}
	if quotas && len(common) > 0 {
		t.Run("CalendarQuota", func(t *testing.T) { agreeTimelines(t, all, common[0], quotaLimits(t), quotaGap, 25) })
	}
	if settlers(t, all) {
		for _, alg := range common {
			t.Run("Settle/"+alg.String(), func(t *testing.T) { agreeSettle(t, all, alg, settleLimits(alg, false)) })
			if keep {
				t.Run("Settle/KeepUsage/"+alg.String(), func(t *testing.T) { agreeSettle(t, all, alg, settleLimits(alg, true)) })
			}
		}
		if warm && slices.Contains(common, ratelimit.TokenBucket) {
			t.Run("Settle/Warmup", func(t *testing.T) {
				agreeSettle(t, all, ratelimit.TokenBucket, [][]ratelimit.Limit{{{Rate: 10, Burst: 20, Warmup: 5 * time.Second}}})
			})
		}
		if quotas && len(common) > 0 {
			t.Run("Settle/CalendarQuota", func(t *testing.T) {
				agreeSettle(t, all, common[0], [][]ratelimit.Limit{{quota(t, "7/day@Europe/Paris")}})
			})
		}
	}
	if keep {
		for _, alg := range common {
			t.Run("KeepUsage/"+alg.String(), func(t *testing.T) { agreeKeep(t, all, alg) })
		}
	}
}

// gapFunc draws the clock's move before a request of limit, in µs, and the request's cost
// and priority.
type gapFunc func(rng *rand.Rand, limit ratelimit.Limit) (gap float64, n int, p priority.Level, prioritized bool)

// agreeTimelines plays 400 requests on one bucket per limit, the i-th limit's drawn from
// the seed (i, stream).
func agreeTimelines(t *testing.T, all []Harness, alg ratelimit.Algorithm, limits []ratelimit.Limit, draw gapFunc, stream uint64) {
	for i, limit := range limits {
		t.Run(limit.String(), func(t *testing.T) {
			clock := NewClock()
			ls := make([]ratelimit.Limiter, len(all))
			for k, h := range all {
				ls[k] = h.New(t, Config{Algorithm: alg, Clock: clock})
			}
			rng := rand.New(rand.NewPCG(uint64(i), stream))
			budget := int64(5e15) // µs the clock may still move: it stays below the year 2255
			ctx := context.Background()
			allowed, denied := 0, 0
			for j := range 400 {
				gap, n, p, prioritized := draw(rng, limit)
				step := min(int64(gap), budget)
				budget -= step
				clock.Advance(time.Duration(step) * time.Microsecond)
				pctx := ctx
				if prioritized {
					pctx = priority.With(ctx, p)
				}
				want, werr := ls[0].AllowN(pctx, "k", limit, n)
				for k, l := range ls[1:] {
					got, err := l.AllowN(pctx, "k", limit, n)
					if werr != nil {
						// A cost above what the priority may take is refused alike.
						require.ErrorIs(t, werr, ratelimit.ErrExceedsBurst)
						require.ErrorIs(t, err, ratelimit.ErrExceedsBurst, "limiter %d, request %d", k+1, j)
						continue
					}
					require.NoError(t, err)
					require.Equal(t, want, got, "limiter %d, request %d: n=%d at %v, %v", k+1, j, n, clock.Now(), p)
				}
				if werr == nil && want.Allowed {
					allowed++
				} else if werr == nil {
					denied++
				}
			}
			if alg == ratelimit.TokenBucket {
				require.Positive(t, allowed)
				require.Positive(t, denied)
			}
		})
	}
}

// bucketLimits are the token bucket's: from one token a day to the most a second, with
// bursts up to 10⁹, and some no one would choose.
func bucketLimits() []ratelimit.Limit {
	rng := rand.New(rand.NewPCG(17, 17))
	limits := []ratelimit.Limit{
		{Rate: 1, Burst: 2},
		{Rate: 3, Burst: 7},
		ratelimit.PerMinute(100),
		{Rate: 1.0 / 86400, Burst: 5},
		{Rate: 123_456.789, Burst: 1000},
		{Rate: maxRate, Burst: 1e9},
	}
	for range 6 {
		limits = append(limits, ratelimit.Limit{
			Rate:  math.Exp(rng.Float64()*math.Log(maxRate*86400)) / 86400,
			Burst: 1 + rng.IntN(1<<rng.IntN(30)),
		})
	}
	return limits
}

// bucketGap: nothing, a fraction of the interval, up to three, up to a whole refill, or a
// microsecond or two; costs mostly small, sometimes up to the burst.
func bucketGap(rng *rand.Rand, limit ratelimit.Limit) (float64, int, priority.Level, bool) {
	interval := 1e6 / limit.Rate
	var gap float64
	switch rng.IntN(5) {
	case 1:
		gap = rng.Float64() * interval
	case 2:
		gap = rng.Float64() * 3 * interval
	case 3:
		gap = rng.Float64() * float64(limit.Burst) * interval
	case 4:
		gap = float64(rng.IntN(3))
	}
	return min(gap, 1e13), cost(rng, limit), 0, false // 116 days at most
}

func cost(rng *rand.Rand, limit ratelimit.Limit) int {
	n := 1 + rng.IntN(min(limit.Burst, 4))
	if rng.IntN(4) == 0 {
		n = 1 + rng.IntN(limit.Burst)
	}
	return n
}

// warmLimits are the token bucket's with warm-ups from 1 µs to a year.
func warmLimits() []ratelimit.Limit {
	rng := rand.New(rand.NewPCG(18, 18))
	limits := []ratelimit.Limit{
		{Rate: 100, Burst: 50, Warmup: time.Second},
		{Rate: 1, Burst: 2, Warmup: time.Minute},
		{Rate: 3, Burst: 7, Warmup: 1500 * time.Millisecond},
		{Rate: 100.0 / 60, Burst: 100, Warmup: 10 * time.Minute},
		{Rate: 1.0 / 86400, Burst: 5, Warmup: 7 * 24 * time.Hour},
		{Rate: 123_456.789, Burst: 1000, Warmup: 3 * time.Microsecond},
		{Rate: maxRate, Burst: 1e9, Warmup: time.Second},
		{Rate: 10, Burst: 1, Warmup: time.Microsecond},
		{Rate: maxRate, Burst: args.MaxBurst, Warmup: args.MaxWarmup},
		{Rate: 5e5, Burst: args.MaxBurst, Warmup: time.Hour},
	}
	for range 8 {
		limits = append(limits, ratelimit.Limit{
			Rate:   math.Exp(rng.Float64()*math.Log(maxRate*86400)) / 86400,
			Burst:  1 + rng.IntN(1<<rng.IntN(30)),
			Warmup: time.Duration(1+rng.Int64N(1<<rng.IntN(45))) * time.Microsecond,
		})
	}
	return limits
}

// warmGap: as bucketGap, and parts of the warm-up, and rests long enough to go cold; a
// random priority one request in two.
func warmGap(rng *rand.Rand, limit ratelimit.Limit) (float64, int, priority.Level, bool) {
	interval := 1e6 / limit.Rate
	period := float64(limit.Warmup.Microseconds())
	var gap float64
	switch rng.IntN(7) {
	case 1:
		gap = rng.Float64() * interval
	case 2:
		gap = rng.Float64() * 3 * interval
	case 3:
		gap = rng.Float64() * float64(limit.Burst) * interval
	case 4:
		gap = float64(rng.IntN(3))
	case 5:
		gap = rng.Float64() * period / 4
	case 6:
		gap = rng.Float64() * (2*period + 2*float64(limit.Burst)*interval)
	}
	n := cost(rng, limit)
	prioritized := rng.IntN(2) == 0
	var p priority.Level
	if prioritized {
		p = priority.Level(rng.IntN(3))
	}
	return min(gap, 1e13), n, p, prioritized
}

// windowLimits are the windows': days to centuries, where the counter's float arithmetic
// is inexact and its search for RetryAfter must take the same steps everywhere.
var windowLimits = []ratelimit.Limit{
	{Rate: 1e-3, Burst: 1000},                       // W = 10⁶ s, 11.6 days
	{Rate: 12345.0 / (1 << 40) * 1e6, Burst: 12345}, // W = 2⁴⁰ µs, 12.7 days
	{Rate: 1e9 / 3e15 * 1e6, Burst: 1e9},            // W = 3·10¹⁵ µs, 95 years
	{Rate: 7e-9, Burst: 7},                          // W = 10¹⁵ µs, 31.7 years
	{Rate: 1e-6, Burst: 9007},                       // W = 9.007·10¹⁵ µs, 285 years
	{Rate: 3, Burst: 1},                             // W = 333,333 µs
}

// windowGap: nothing, up to an eighth of a window, a window, or two; costs up to the burst
// one request in two.
func windowGap(rng *rand.Rand, limit ratelimit.Limit) (float64, int, priority.Level, bool) {
	w, err := args.Window(limit)
	if err != nil {
		panic(err) // one of windowLimits
	}
	var gap int64
	switch rng.IntN(4) {
	case 1:
		gap = rng.Int64N(w/8 + 1)
	case 2:
		gap = rng.Int64N(w + 1)
	case 3:
		gap = rng.Int64N(2*w + 1)
	}
	n := 1 + rng.IntN(limit.Burst)
	if rng.IntN(2) == 0 {
		n = 1 + rng.IntN(min(limit.Burst, 3))
	}
	return float64(gap), n, 0, false
}
