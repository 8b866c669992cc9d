package ratelimittest

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// The rules of ratelimit.Settler, run by Run on a limiter that has it: an underrun is the
// refund of the charge; an overrun is charged at once, into a debt of at most Burst, which
// later requests wait out; beyond the bound, or on an algorithm that keeps no debt, it is
// refused, and nothing is charged.

// settleRulesOf returns the settle rules of algorithm a.
func settleRulesOf(a ratelimit.Algorithm) []rule {
	rules := []rule{{"UnderrunIsRefund", settleUnderrun}, {"Invalid", settleInvalid}}
	if keepsDebt(a) {
		return append(rules, rule{"Overrun", settleOverrun}, rule{"DebtBound", settleDebtBound})
	}
	return append(rules, rule{"OverrunNotSupported", settleNotSupported})
}

// keepsDebt reports whether an algorithm's bucket can be charged into debt: those that keep
// a theoretical arrival time.
func keepsDebt(a ratelimit.Algorithm) bool {
	return a == ratelimit.TokenBucket || a == ratelimit.LeakyBucket
}

func settler(t testing.TB, h harness) ratelimit.Settler {
	t.Helper()
	s, ok := ratelimit.As[ratelimit.Settler](h.Limiter)
	require.True(t, ok)
	return s
}

// settleUnderrun: settling 5 reserved tokens to 2 answers, and leaves, what a refund of 3
// with the same charge does, on every algorithm; settling to exactly what was reserved
// answers as Peek for one token and changes nothing.
func settleUnderrun(t testing.TB, h harness) {
	ctx := context.Background()
	s, ins := settler(t, h), inspector(t, h)
	limit := ratelimit.Limit{Rate: 1, Burst: 8}
	settled, err := h.Limiter.AllowN(ctx, "settled", limit, 5)
	require.NoError(t, err)
	refunded, err := h.Limiter.AllowN(ctx, "refunded", limit, 5)
	require.NoError(t, err)
	require.True(t, settled.Allowed && refunded.Allowed)
	h.Advance(100 * time.Millisecond)
	got, err := s.Settle(ctx, "settled", limit, settled.Charge, 5, 2)
	require.NoError(t, err)
	want, err := ins.Refund(ctx, "refunded", limit, 3, refunded.Charge)
	require.NoError(t, err)
	require.Equal(t, want, got)
	peek, err := ins.Peek(ctx, "settled", limit, 1)
	require.NoError(t, err)
	same, err := s.Settle(ctx, "settled", limit, settled.Charge, 4, 4)
	require.NoError(t, err)
	require.Equal(t, peek, same, "settled to what was reserved")
	again, err := ins.Peek(ctx, "settled", limit, 1)
	require.NoError(t, err)
	require.Equal(t, peek, again, "and nothing changed")
}

// settleInvalid: negative counts are ErrInvalidCost, and the key and limit are checked as
// AllowN checks them.
func settleInvalid(t testing.TB, h harness) {
	ctx := context.Background()
	s := settler(t, h)
	limit := ratelimit.Limit{Rate: 1, Burst: 2}
	for _, c := range []struct{ reserved, actual int }{{-1, 1}, {1, -1}} {
		_, err := s.Settle(ctx, "k", limit, ratelimit.Charge{}, c.reserved, c.actual)
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, "%+v", c)
	}
	_, err := s.Settle(ctx, "", limit, ratelimit.Charge{}, 1, 2)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	_, err = s.Settle(ctx, "k", ratelimit.Limit{Rate: 1}, ratelimit.Charge{}, 1, 2)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
}

// settleOverrun: Rate 1/s, Burst 2. A request reserving 1 token costs 4: the bucket is 4
// tokens short of full, 2 in debt. It is full again in 4 s; a request for one token waits
// until the bucket is 1 short, 3 s; AllowN denies it until then, and admits it then.
func settleOverrun(t testing.TB, h harness) {
	ctx := context.Background()
	s := settler(t, h)
	limit := ratelimit.Limit{Rate: 1, Burst: 2}
	res, err := h.Limiter.Allow(ctx, "k", limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	got, err := s.Settle(ctx, "k", limit, res.Charge, 1, 4)
	require.NoError(t, err)
	require.Equal(t, ratelimit.Result{Limit: limit, RetryAfter: 3 * time.Second, ResetAfter: 4 * time.Second}, got)
	h.Advance(3*time.Second - time.Microsecond)
	res, err = h.Limiter.Allow(ctx, "k", limit)
	require.NoError(t, err)
	require.False(t, res.Allowed, "in debt")
	require.Equal(t, time.Microsecond, res.RetryAfter, "the debt counted in RetryAfter")
	h.Advance(time.Microsecond)
	res, err = h.Limiter.Allow(ctx, "k", limit)
	require.NoError(t, err)
	require.True(t, res.Allowed, "the debt waited out")
	require.Equal(t, 0, res.Remaining)
}

// settleDebtBound: Rate 1/s, Burst 2. An overrun of 4 on a full bucket takes it to the
// bound, 2 in debt; one more token is refused with ErrExceedsBurst, charging nothing; an
// overrun of 5 (more than 2·Burst) never fits. A second later one more fits again.
func settleDebtBound(t testing.TB, h harness) {
	ctx := context.Background()
	s, ins := settler(t, h), inspector(t, h)
	limit := ratelimit.Limit{Rate: 1, Burst: 2}
	_, err := s.Settle(ctx, "k", limit, ratelimit.Charge{}, 0, 4)
	require.NoError(t, err)
	_, err = s.Settle(ctx, "k", limit, ratelimit.Charge{}, 0, 1)
	require.ErrorIs(t, err, ratelimit.ErrExceedsBurst)
	_, err = s.Settle(ctx, "fresh", limit, ratelimit.Charge{}, 0, 5)
	require.ErrorIs(t, err, ratelimit.ErrExceedsBurst)
	peek, err := ins.Peek(ctx, "k", limit, 1)
	require.NoError(t, err)
	require.Equal(t, 4*time.Second, peek.ResetAfter, "the refused settle charged nothing")
	peek, err = ins.Peek(ctx, "fresh", limit, 1)
	require.NoError(t, err)
	untouched, err := ins.Peek(ctx, "untouched", limit, 1)
	require.NoError(t, err)
	require.Equal(t, untouched, peek, "nor did the one that never fits")
	h.Advance(time.Second)
	got, err := s.Settle(ctx, "k", limit, ratelimit.Charge{}, 1, 2)
	require.NoError(t, err)
	require.Equal(t, 4*time.Second, got.ResetAfter)
}

// settleNotSupported: an algorithm that keeps no debt refuses an overrun with
// ErrNotSupported, charging nothing; so does a token bucket with a warm-up.
func settleNotSupported(t testing.TB, h harness) {
	ctx := context.Background()
	s, ins := settler(t, h), inspector(t, h)
	limit := ratelimit.Limit{Rate: 1, Burst: 2}
	_, err := s.Settle(ctx, "k", limit, ratelimit.Charge{}, 0, 1)
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)
	peek, err := ins.Peek(ctx, "k", limit, 2)
	require.NoError(t, err)
	require.True(t, peek.Allowed, "nothing charged")
}

// settleLimits are the limit sets agreeSettle plays on alg: the token and leaky buckets'
// edges (a rate of 10⁶/s, a Burst of 10⁹), smaller ones on the windows, whose sliding log
// keeps an entry per token. With keep, each set is two limits with KeepUsage that a
// timeline alternates between at random, so that usage, and debt, carry between them.
func settleLimits(alg ratelimit.Algorithm, keep bool) [][]ratelimit.Limit {
	limits := []ratelimit.Limit{{Rate: 1, Burst: 2}, {Rate: 1000, Burst: 50}, {Rate: 0.37, Burst: 7}}
	if !keep && (alg == ratelimit.TokenBucket || alg == ratelimit.LeakyBucket) {
		limits = append(limits, ratelimit.Limit{Rate: 1e6, Burst: 1e9})
	}
	var sets [][]ratelimit.Limit
	for _, l := range limits {
		l.Algorithm = alg
		set := []ratelimit.Limit{l}
		if keep {
			l.KeepUsage = true
			other := l
			other.Rate, other.Burst = l.Rate*3, l.Burst+3
			set = []ratelimit.Limit{l, other}
		}
		sets = append(sets, set)
	}
	return sets
}

// agreeSettle plays timelines of decisions, settles (underruns, overruns, refusals at the
// debt bound, and of an overrun on an algorithm that keeps no debt) and peeks on alg's
// buckets of every harness, one timeline per limit set (a step's limit drawn from its set),
// and requires the same answers and the same refusals.
func agreeSettle(t *testing.T, all []Harness, alg ratelimit.Algorithm, sets [][]ratelimit.Limit) {
	for i, set := range sets {
		t.Run(set[0].String(), func(t *testing.T) {
			clock := NewClock()
			ls := make([]settling, len(all))
			for k, h := range all {
				l := h.New(t, Config{Algorithm: alg, Clock: clock})
				s, ok := ratelimit.As[ratelimit.Settler](l)
				require.True(t, ok, "harness %d has no Settler", k)
				ls[k] = settling{l, s}
			}
			rng := rand.New(rand.NewPCG(uint64(i), 40))
			ctx := context.Background()
			overruns, refused := 0, 0 // overruns charged, and refused as ErrNotSupported
			for step := range 300 {
				limit := set[rng.IntN(len(set))]
				clock.Advance(time.Duration(rng.Float64() * 3 * float64(limit.Burst) / max(limit.Rate, 1e-6) / 8 * 1e9))
				n := 1 + rng.IntN(limit.Burst)
				var c ratelimit.Charge
				for k, s := range ls {
					res, err := s.AllowN(ctx, "k", limit, n)
					require.NoError(t, err)
					if k == 0 {
						c = res.Charge
					}
					require.Equal(t, c, res.Charge, "step %d: AllowN %d", step, n)
				}
				reserved := n
				if c.At.IsZero() {
					// denied: a cost charged after the fact, reserved up front not at all
					reserved = 0
				}
				actual := rng.IntN(3*n + 1)
				var first ratelimit.Result
				var firstErr error
				for k, s := range ls {
					res, err := s.Settle(ctx, "k", limit, c, reserved, actual)
					if k == 0 {
						first, firstErr = res, err
						continue
					}
					require.Equal(t, first, res, "step %d: settle %d to %d", step, reserved, actual)
					require.Equal(t, errClass(firstErr), errClass(err), "step %d: %v / %v", step, firstErr, err)
				}
				switch {
				case actual > reserved && firstErr == nil:
					overruns++
				case errors.Is(firstErr, ratelimit.ErrNotSupported):
					refused++
				}
			}
			// Each timeline has overruns that fit; an algorithm keeps a debt for all of
			// them or refuses all of them.
			if keepsDebt(alg) && set[0].Warmup == 0 && set[0].Algorithm != ratelimit.CalendarQuota {
				require.Positive(t, overruns)
				require.Zero(t, refused)
			} else {
				require.Zero(t, overruns)
				require.Positive(t, refused)
			}
		})
	}
}

// settling is a limiter and its Settler.
type settling struct {
	ratelimit.Limiter
	ratelimit.Settler
}

func inspector(t testing.TB, h harness) ratelimit.Inspector {
	t.Helper()
	ins, ok := ratelimit.As[ratelimit.Inspector](h.Limiter)
	require.True(t, ok, "a Settler without an Inspector")
	return ins
}

// errClass names the sentinel an error wraps, for comparing two backends' refusals.
func errClass(err error) string {
	for _, e := range []error{ratelimit.ErrExceedsBurst, ratelimit.ErrNotSupported, ratelimit.ErrInvalidArgument} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return ""
}

// settlers reports whether every harness's limiter has a ratelimit.Settler.
func settlers(t testing.TB, all []Harness) bool {
	for _, h := range all {
		_, ok := ratelimit.As[ratelimit.Settler](h.New(t, Config{Clock: NewClock()}))
		if !ok {
			return false
		}
	}
	return true
}
